"""The `.epk` plan format on the Python side: op ids, dtypes and the byte writer (the C loader is the reader)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import onnx

from .op_contract import contract

MAGIC = b"EPK1"
FORMAT_VERSION = 1
HEADER_BYTES = 96
TENSOR_RECORD_BYTES = 48
OP_RECORD_BYTES = 16
ABSENT = 0xFFFFFFFF
MAX_RANK = 8
WEIGHT_ALIGN = 64
ARENA_ALIGN = 64

ARENA, WEIGHT = 0, 1

_CONTRACT = contract()
OPS = {op.name: op.id for op in _CONTRACT.ops}
"""Op ids of the plan format (ops.toml)."""
DTYPES = dict(_CONTRACT.dtypes)
"""numpy (and ml_dtypes) dtype names to the plan's dtype codes (ONNX TensorProto numbers)."""
NAMES = {code: name for name, code in DTYPES.items()}
SUB_BYTE = {"int4": 4, "uint4": 4, "float4_e2m1fn": 4, "int2": 2, "uint2": 2}
"""Bits per element of the dtypes the plan packs, the first element in the lowest bits of a byte."""
BINARY = {name: i for i, name in enumerate(_CONTRACT.kinds["Binary"])}
UNARY = {name: i for i, name in enumerate(_CONTRACT.kinds["Unary"])}
ACTIVATIONS = {name: i for i, name in enumerate(_CONTRACT.kinds["Activation"])}
REDUCE = {f"Reduce{name}": i for i, name in enumerate(_CONTRACT.kinds["Reduce"])}


class F32(float):
    """A parameter word written as float32 bits (plain ints are written as int32)."""


@dataclass
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    location: int = ARENA
    data: np.ndarray | None = None
    offset: int = 0

    @property
    def nbytes(self) -> int:
        count = int(np.prod(self.shape, dtype=np.int64))
        bits = SUB_BYTE.get(self.dtype)
        return (count * bits + 7) // 8 if bits else count * numpy_dtype(self.dtype).itemsize


@dataclass
class Op:
    kind: str
    inputs: list[int | None]
    outputs: list[int]
    params: list[int | float] = field(default_factory=list)


@dataclass
class Plan:
    tensors: list[Tensor]
    ops: list[Op]
    inputs: list[int]
    outputs: list[int]
    arena_bytes: int
    scratch_bytes: int
    open_ops: int = 0
    """The first ops, which the core runs once when a session opens (ExpandWeight); each run runs the rest."""


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a plan dtype name (ml_dtypes' for bfloat16, float8, float4, int4 and int2)."""
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(DTYPES[name]))


def plan_bytes(array: np.ndarray, dtype: str) -> bytes:
    """Values as the plan holds them: packed for sub-byte dtypes (whose numpy codes sit in a byte each)."""
    bits = SUB_BYTE.get(dtype)
    if bits is None:
        return np.ascontiguousarray(array, dtype=numpy_dtype(dtype)).tobytes()
    per_byte = 8 // bits
    codes = np.asarray(array).astype(numpy_dtype(dtype)).reshape(-1).view(np.uint8) & ((1 << bits) - 1)
    codes = np.append(codes, np.zeros(-len(codes) % per_byte, np.uint8)).reshape(-1, per_byte)
    shifted = codes << (np.arange(per_byte, dtype=np.uint8) * bits)
    return np.bitwise_or.reduce(shifted, axis=1).astype(np.uint8).tobytes()


def from_plan_bytes(data: bytes | np.ndarray, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """The array a plan's bytes hold (the inverse of `plan_bytes`)."""
    raw = np.frombuffer(bytes(data), np.uint8)
    bits = SUB_BYTE.get(dtype)
    if bits is None:
        return raw.view(numpy_dtype(dtype)).reshape(shape).copy()
    count = int(np.prod(shape, dtype=np.int64))
    shifts = np.arange(8 // bits, dtype=np.uint8) * bits
    codes = ((raw[:, None] >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count].astype(np.uint8)
    return codes.view(numpy_dtype(dtype)).reshape(shape)


def weight_bytes(tensor: Tensor) -> bytes:
    """A weight's data as the plan stores it."""
    return plan_bytes(tensor.data, tensor.dtype)


def _param_words(params: list[int | float]) -> bytes:
    return b"".join(struct.pack("<f", p) if isinstance(p, F32) else struct.pack("<i", int(p)) for p in params)


def write(plan: Plan) -> bytes:
    """The plan as `.epk` bytes: header, tensor table, op table, op tensor list, input/output list, parameters,
    names, then the 64-byte-aligned weight blob."""
    names = bytearray()
    weights = bytearray()
    tensor_records = bytearray()
    for tensor in plan.tensors:
        name = tensor.name.encode()
        name_offset = len(names)
        names += name
        if tensor.location == WEIGHT:
            weights += bytes(_align(len(weights), WEIGHT_ALIGN) - len(weights))
            tensor.offset = len(weights)
            weights += weight_bytes(tensor)
        dims = list(tensor.shape) + [0] * (MAX_RANK - len(tensor.shape))
        code = DTYPES[tensor.dtype]
        tensor_records += struct.pack("<BBBBIII8I", code, len(tensor.shape), tensor.location, 0,
                                      name_offset, len(name), tensor.offset, *dims)
    io, params, op_records = [], bytearray(), bytearray()
    for op in plan.ops:
        words = _param_words(op.params)
        op_records += struct.pack("<HBBIII", OPS[op.kind], len(op.inputs), len(op.outputs), len(io), len(params) // 4,
                                  len(words) // 4)
        io += [ABSENT if t is None else t for t in op.inputs] + op.outputs
        params += words
    sections = [bytes(tensor_records), bytes(op_records), struct.pack(f"<{len(io)}I", *io),
                struct.pack(f"<{len(plan.inputs) + len(plan.outputs)}I", *plan.inputs, *plan.outputs),
                bytes(params), bytes(names)]
    offsets, at = [], HEADER_BYTES
    for section in sections:
        offsets.append(at)
        at = _align(at + len(section), 4)
    weights_offset = _align(at, WEIGHT_ALIGN)
    header = struct.pack("<4s21I", MAGIC, FORMAT_VERSION, HEADER_BYTES, 0, len(plan.tensors), offsets[0],
                         len(plan.ops), offsets[1], len(io), offsets[2], len(plan.inputs), len(plan.outputs),
                         offsets[3], offsets[4], len(params), offsets[5], len(names), weights_offset, len(weights),
                         plan.arena_bytes, plan.scratch_bytes, plan.open_ops)
    out = bytearray(header + bytes(HEADER_BYTES - len(header)))
    for offset, section in zip(offsets, sections):
        out += bytes(offset - len(out)) + section
    out += bytes(weights_offset - len(out)) + weights
    return bytes(out)


@dataclass(frozen=True)
class PortInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]


def ports(data: bytes) -> tuple[list[PortInfo], list[PortInfo]]:
    """A plan's inputs and outputs, in order (enough to feed and read a plan file without its model); the C loader
    checks the rest when the plan is opened."""
    if len(data) < HEADER_BYTES or data[:4] != MAGIC:
        raise ValueError("not an .epk plan")
    words = struct.unpack_from("<21I", data, 0)
    tensors_at, n_inputs, n_outputs, ports_at, names_at = words[5], words[10], words[11], words[12], words[15]
    codes = {code: name for name, code in DTYPES.items()}
    found = []
    for index in struct.unpack_from(f"<{n_inputs + n_outputs}I", data, ports_at):
        record = tensors_at + index * TENSOR_RECORD_BYTES
        code, rank = data[record], data[record + 1]
        name_offset, name_length = struct.unpack_from("<II", data, record + 4)
        dims = struct.unpack_from(f"<{rank}I", data, record + 16)
        found.append(PortInfo(data[names_at + name_offset:names_at + name_offset + name_length].decode(),
                              codes.get(code, "unknown"), tuple(dims)))
    return found[:n_inputs], found[n_inputs:]
