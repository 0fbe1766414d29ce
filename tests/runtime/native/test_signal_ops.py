"""DFT, STFT, the window functions and MelWeightMatrix on the `cpu` provider against onnxruntime, on single-node
models: DFT at opsets 17 (axis attribute) and 20 (axis input) over real and complex signals, forward, one-sided and
one-sided inverse (irfft), with dft_length padding and truncating, radix-2 and other lengths; STFT with a window or
a frame length, one- and two-sided; windows periodic and symmetric and MelWeightMatrix, whose scalar inputs are
model inputs. Tolerance: 1e-4 of the largest magnitude of the expected output. onnx's reference implementation is
the oracle where onnxruntime refuses (a one-sided DFT of a complex signal)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(17)


def scalar(name: str, value: int | float) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(value, np.int64 if isinstance(value, int) else np.float32), name)


def single_node(op: str, feeds: dict[str, np.ndarray], constants: dict[str, int | None], opset: int,
                **attributes: object) -> onnx.ModelProto:
    """One `op` node whose inputs are the feeds (model inputs) and the constants (initializers; None: absent), in the
    order given."""
    inputs = [name if constants.get(name, 0) is not None else "" for name in [*feeds, *constants]]
    node = helper.make_node(op, inputs, ["y"], **attributes)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
        [helper.make_value_info("y", onnx.TypeProto())],
        [scalar(n, v) for n, v in constants.items() if v is not None])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], oracle: str = "onnxruntime") -> None:
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    if oracle == "onnxruntime":
        expected = run_onnxruntime(model, feeds)["y"]
    else:
        expected = ReferenceEvaluator(model).run(None, feeds)[0]
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-4 * scale)


def signal(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize(("inverse", "onesided"), [(0, 0), (0, 1)])
@pytest.mark.parametrize("axis", [1, 2, -2])
def test_dft_opset_20(axis: int, inverse: int, onesided: int, channels: int) -> None:
    x = signal((2, 6, 5, channels))
    model = single_node("DFT", {"x": x}, {"dft_length": None, "axis": axis}, 20, inverse=inverse, onesided=onesided)
    # onnxruntime refuses a one-sided transform of a complex signal: onnx's reference implementation is the oracle
    check(model, {"x": x}, "reference" if onesided and channels == 2 else "onnxruntime")


@pytest.mark.parametrize("length", [1, 3, 8, 16, 64])
def test_dft_length_pads_and_truncates(length: int) -> None:
    x = signal((3, 7, 2))
    check(single_node("DFT", {"x": x}, {"dft_length": length, "axis": 1}, 20), {"x": x})


@pytest.mark.parametrize("axis", [1, 2])
def test_dft_opset_17_axis_attribute(axis: int) -> None:
    x = signal((2, 4, 9, 1))
    check(single_node("DFT", {"x": x}, {}, 17, axis=axis), {"x": x})
    check(single_node("DFT", {"x": x}, {"dft_length": 12}, 17, axis=axis, onesided=1), {"x": x})


@pytest.mark.parametrize("length", [10, 16])
def test_onesided_inverse_undoes_forward(length: int) -> None:
    x = signal((2, length, 1))
    forward = single_node("DFT", {"x": x}, {"dft_length": None, "axis": 1}, 20, onesided=1)
    spectrum = PROVIDERS["cpu"].compile(forward, {}).run({"x": x})["y"]
    inverse = single_node("DFT", {"x": spectrum}, {"dft_length": length, "axis": 1}, 20, inverse=1, onesided=1)
    back = PROVIDERS["cpu"].compile(inverse, {}).run({"x": spectrum})["y"]
    np.testing.assert_allclose(back, x, atol=1e-5)


@pytest.mark.parametrize("length", [12, 16])
@pytest.mark.parametrize("onesided", [0, 1])
@pytest.mark.parametrize("with_window", [False, True])
def test_stft(with_window: bool, onesided: int, length: int) -> None:
    x = signal((2, 40, 1))
    feeds = {"signal": x}
    if with_window:
        feeds["window"] = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)).astype(np.float32)
    constants = {"frame_step": 5, **({} if with_window else {"frame_length": length})}
    model = single_node("STFT", feeds, constants, 17, onesided=onesided)
    order = ["signal", "frame_step", "window", "frame_length"]
    node = model.graph.node[0]
    node.ClearField("input")
    node.input.extend([name if name in feeds or name in constants else "" for name in order])
    while node.input and not node.input[-1]:
        node.input.pop()
    check(model, feeds)


def test_stft_complex_signal() -> None:
    x = signal((1, 16, 2))
    model = single_node("STFT", {"signal": x}, {"frame_step": 4}, 17, onesided=0)
    model.graph.node[0].input.extend(["", "frame_length"])
    model.graph.initializer.append(scalar("frame_length", 8))
    check(model, {"signal": x})


@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
def test_windows(op: str, periodic: int) -> None:
    size = np.array(10, np.int64)
    check(single_node(op, {"size": size}, {}, 17, periodic=periodic), {"size": size})


def test_mel_weight_matrix() -> None:
    feeds = {"num_mel_bins": np.array(8, np.int64), "dft_length": np.array(64, np.int64),
             "sample_rate": np.array(16000, np.int64), "lower_edge_hertz": np.array(0, np.float32),
             "upper_edge_hertz": np.array(8000, np.float32)}
    check(single_node("MelWeightMatrix", feeds, {}, 17), feeds)
