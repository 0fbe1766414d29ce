"""ctypes binding to the host build of the C core: one `NativeSession` per plan."""

from __future__ import annotations

import ctypes
import weakref
from functools import cache
from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .build import shared_library
from .epk import NAMES, SUB_BYTE, from_plan_bytes, numpy_dtype, plan_bytes

MAX_RANK = 8
MEMORY_ALIGN = 64


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("name_len", ctypes.c_uint32), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_RANK), ("bytes", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


@cache
def library(path: Path | None = None) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path or shared_library()))
    size_p, void_p = ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p
    lib.ep_required_bytes.argtypes = [void_p, ctypes.c_size_t, size_p]
    lib.ep_open.argtypes = [void_p, ctypes.c_size_t, void_p, ctypes.c_size_t, ctypes.POINTER(void_p)]
    lib.ep_open_error.argtypes = [void_p, ctypes.c_size_t]
    lib.ep_open_error.restype = ctypes.c_char_p
    lib.ep_run.argtypes = [void_p]
    lib.ep_error.argtypes = [void_p]
    lib.ep_error.restype = ctypes.c_char_p
    for name in ("ep_input_count", "ep_output_count"):
        getattr(lib, name).argtypes = [void_p]
        getattr(lib, name).restype = ctypes.c_size_t
    for name in ("ep_input", "ep_output"):
        getattr(lib, name).argtypes = [void_p, ctypes.c_size_t, ctypes.POINTER(TensorInfo)]
    lib.ep_status_name.restype = ctypes.c_char_p
    return lib


def with_worker_calls(lib: ctypes.CDLL) -> ctypes.CDLL:
    """`lib` with the calls that hand a session its workers declared (cores built before them lack them)."""
    void_p = ctypes.c_void_p
    lib.ep_worker_scratch_bytes.argtypes = [void_p]
    lib.ep_worker_scratch_bytes.restype = ctypes.c_size_t
    lib.ep_set_workers.argtypes = [void_p, void_p, void_p, ctypes.c_int32, void_p, ctypes.c_size_t]
    return lib


def thread_pool(lib: ctypes.CDLL, threads: int) -> ctypes.c_void_p:
    """A pool of `threads` threads in all (pool/ep_pool.c), stopped and freed with the object returned."""
    lib.ep_pool_create.argtypes = [ctypes.c_int32]
    lib.ep_pool_create.restype = ctypes.c_void_p
    lib.ep_pool_destroy.argtypes = [ctypes.c_void_p]
    pool = lib.ep_pool_create(threads)
    if not pool:
        raise EdgepackError(f"could not start {threads} threads for the cpu runtime core", fix="ask for fewer threads")
    handle = ctypes.c_void_p(pool)
    weakref.finalize(handle, lib.ep_pool_destroy, pool)
    return handle


def aligned_buffer(size: int, alignment: int = MEMORY_ALIGN) -> np.ndarray:
    raw = np.zeros(size + alignment, dtype=np.uint8)
    start = (-raw.ctypes.data) % alignment
    return raw[start:start + size]


class NativeError(EdgepackError):
    """The C core refused a plan or failed while running it."""

    def __init__(self, status: int, message: str, what: str) -> None:
        self.status = status
        super().__init__(f"{what}: {message or 'no message'} (status {status})", where="cpu runtime core",
                         fix="re-lower the model; if the plan came from edgepack, report it")


class Port:
    """A model input or output of an open plan: its bytes in the session's memory."""

    def __init__(self, name: str, dtype: str, shape: tuple[int, ...], raw: np.ndarray) -> None:
        self.name, self.dtype, self.shape, self.raw = name, dtype, shape, raw
        self.view = None if dtype in SUB_BYTE else raw.view(numpy_dtype(dtype)).reshape(shape)

    def write(self, value: np.ndarray) -> None:
        if self.view is None:
            self.raw[:] = np.frombuffer(plan_bytes(value, self.dtype), np.uint8)
        else:
            self.view[...] = value

    def read(self) -> np.ndarray:
        return from_plan_bytes(self.raw, self.dtype, self.shape) if self.view is None else self.view.copy()


class NativeSession:
    """A plan opened in memory this object owns; `run(feeds)` writes inputs, runs and copies outputs out. With
    `threads` above 1, its convs and products run on a thread pool of that many threads (the outputs are the same, bit
    for bit)."""

    def __init__(self, plan: bytes, library_path: Path | None = None, threads: int = 1) -> None:
        self.lib = library(library_path)
        self.plan = aligned_buffer(len(plan))
        self.plan[:] = np.frombuffer(plan, dtype=np.uint8)
        needed = ctypes.c_size_t()
        status = self.lib.ep_required_bytes(self.plan.ctypes.data, len(plan), ctypes.byref(needed))
        if status:
            raise NativeError(status, self.lib.ep_status_name(status).decode(), "the plan header is invalid")
        self.memory = aligned_buffer(needed.value)
        handle = ctypes.c_void_p()
        status = self.lib.ep_open(self.plan.ctypes.data, len(plan), self.memory.ctypes.data, needed.value,
                                  ctypes.byref(handle))
        if status:
            message = self.lib.ep_open_error(self.memory.ctypes.data, needed.value).decode(errors="replace")
            raise NativeError(status, message, "the runtime core refused the plan")
        self.handle = handle
        if threads > 1:
            self._use_threads(threads)
        self.inputs = [self._info(self.lib.ep_input, i) for i in range(self.lib.ep_input_count(handle))]
        self.outputs = [self._info(self.lib.ep_output, i) for i in range(self.lib.ep_output_count(handle))]

    def _use_threads(self, threads: int) -> None:
        with_worker_calls(self.lib)
        self.pool = thread_pool(self.lib, threads)
        self.worker_memory = aligned_buffer(self.lib.ep_worker_scratch_bytes(self.handle) * (threads - 1))
        status = self.lib.ep_set_workers(self.handle, ctypes.cast(self.lib.ep_pool_loop, ctypes.c_void_p), self.pool,
                                         threads, self.worker_memory.ctypes.data, self.worker_memory.nbytes)
        if status:
            raise NativeError(status, self.lib.ep_error(self.handle).decode(errors="replace"),
                              "the runtime core refused the workers' memory")

    def _info(self, getter: object, index: int) -> Port:
        info = TensorInfo()
        getter(self.handle, index, ctypes.byref(info))  # type: ignore[operator]
        name = ctypes.string_at(info.name, info.name_len).decode() if info.name_len else ""
        offset = info.data - self.memory.ctypes.data
        return Port(name, NAMES[info.dtype], tuple(info.dims[:info.rank]),
                    self.memory[offset:offset + info.bytes])

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        for port in self.inputs:
            port.write(feeds[port.name])
        status = self.lib.ep_run(self.handle)
        if status:
            message = self.lib.ep_error(self.handle).decode(errors="replace")
            raise NativeError(status, message, "running the plan failed")
        return {port.name: port.read() for port in self.outputs}
