"""Error-compensated weight rounding: the input columns reproduce each op on onnxruntime, compensation lowers the
output error it is fitted to (and changes nothing when inputs are uncorrelated), calibrated int8/int4 weights of a
real model are closer to fp32 on held-out inputs than nearest rounding, and a build's second lowering reuses them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.quantize import Calibration, quantize
from edgepack.packager.quantize.compensate import compensated_rounding, input_columns, nearest, weight_rows
from edgepack.runtime.model_file import load_model
from edgepack.targets.generic import onnxruntime_session
from edgepack.verify import compare
from tests.packager.quantize.test_weights_int import at_opset_21

RNG = np.random.default_rng(7)


def single_op(op: str, x_shape: list[int], weight: np.ndarray, **attributes) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "w"], ["y"], "op", **attributes)], "single",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


CASES = {
    "conv 3x3 pads": ("Conv", [2, 4, 9, 11], (6, 4, 3, 3), {"pads": [1, 1, 1, 1]}),
    "conv stride 2 dilation 2 asymmetric pads": ("Conv", [1, 4, 12, 10], (5, 4, 3, 2),
                                                 {"strides": [2, 1], "dilations": [2, 2], "pads": [0, 1, 2, 0]}),
    "conv groups 2": ("Conv", [1, 6, 8, 8], (4, 3, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}),
    "depthwise 5x5 stride 2": ("Conv", [1, 8, 13, 13], (8, 1, 5, 5), {"group": 8, "strides": [2, 2]}),
    "conv same upper": ("Conv", [1, 3, 7, 8], (4, 3, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    "conv 1-D": ("Conv", [2, 3, 20], (4, 3, 5), {"pads": [2, 2]}),
    "pointwise": ("Conv", [1, 16, 5, 7], (8, 16, 1, 1), {}),
    "matmul 3-D input": ("MatMul", [2, 5, 12], (12, 7), {}),
    "gemm": ("Gemm", [3, 12], (12, 7), {}),
    "gemm transB": ("Gemm", [3, 12], (7, 12), {"transB": 1}),
}


@pytest.mark.parametrize("case", CASES)
def test_weight_rows_times_input_columns_is_the_op(case: str) -> None:
    op, x_shape, w_shape, attributes = CASES[case]
    weight = RNG.standard_normal(w_shape).astype(np.float32)
    model = single_op(op, x_shape, weight, **attributes)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    (expected,) = onnxruntime_session(model.SerializeToString()).run(None, {"x": x})
    node = model.graph.node[0]
    products = np.matmul(weight_rows(node, weight), input_columns(node, w_shape, x))  # [groups, out/group, N*P]
    if op == "Conv":
        batch, channels = expected.shape[:2]
        actual = products.reshape(channels, batch, -1).transpose(1, 0, 2).reshape(expected.shape)
    else:
        actual = products[0].T.reshape(expected.shape)
    np.testing.assert_allclose(actual, expected, atol=1e-4)


def correlated_columns(length: int, count: int) -> np.ndarray:
    """[1, length, count] inputs that mostly live in a few directions, as a layer's activations do."""
    basis = RNG.standard_normal((length, 4))
    return (basis @ RNG.standard_normal((4, count)) + 0.05 * RNG.standard_normal((length, count)))[None]


def test_compensation_lowers_the_output_error_on_its_inputs() -> None:
    rows = RNG.standard_normal((1, 16, 48))
    columns = correlated_columns(48, 400)
    steps = np.broadcast_to(np.abs(rows).max(axis=2, keepdims=True) / 7, rows.shape)
    gram = np.matmul(columns, np.swapaxes(columns, 1, 2))
    plain = nearest(rows, steps, -8, 7)
    compensated = compensated_rounding(rows, steps, -8, 7, gram)
    assert compensated.min() >= -8 and compensated.max() <= 7
    assert np.all(compensated == np.rint(compensated))

    def output_error(indices: np.ndarray) -> float:
        return float(np.linalg.norm(np.matmul(indices * steps - rows, columns)))

    assert output_error(compensated) < 0.5 * output_error(plain)


def test_uncorrelated_inputs_round_to_nearest() -> None:
    rows = RNG.standard_normal((3, 5, 20))
    steps = np.full(rows.shape, 0.1)
    gram = np.stack([np.diag(RNG.uniform(0.5, 2.0, 20)) for _ in range(3)])
    np.testing.assert_array_equal(compensated_rounding(rows, steps, -127, 127, gram),
                                  nearest(rows, steps, -127, 127))


@pytest.fixture(scope="module")
def ppocr_cls() -> onnx.ModelProto:
    source = check_model(load_model(samples.path("ppocr-cls")).model, "ppocr-cls")
    return at_opset_21(source)


class CountingRun:
    """onnxruntime as a calibration `Run`, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls += 1
        session = onnxruntime_session(model.SerializeToString())
        return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def median_distance(reference: onnx.ModelProto, lowered: onnx.ModelProto, inputs: list[dict[str, np.ndarray]]
                    ) -> float:
    """Median over `inputs` of 1 - cosine between the two models' outputs."""
    expected, actual = (onnxruntime_session(m.SerializeToString()) for m in (reference, lowered))
    return float(np.median([1 - compare(expected.run(None, f)[0], actual.run(None, f)[0])["cosine"] for f in inputs]))


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_calibrated_weights_are_closer_to_fp32_on_held_out_inputs(ppocr_cls: onnx.ModelProto, weights: str) -> None:
    calibration = Calibration([samples.feeds("ppocr-cls", 1000 + i) for i in range(16)], CountingRun())
    held_out = [samples.feeds("ppocr-cls", seed) for seed in range(16)]
    plain = quantize(ppocr_cls, weights)
    compensated = quantize(ppocr_cls, weights, calibration=calibration)
    assert compensated.tensors == plain.tensors and len(calibration.rounded) > 0.7 * plain.tensors
    stored = {t.name: t.data_type for t in compensated.model.graph.initializer}
    assert stored == {t.name: t.data_type for t in plain.model.graph.initializer}
    scales = {t.name: numpy_helper.to_array(t) for t in plain.model.graph.initializer if t.name.endswith("__scale")}
    for tensor in compensated.model.graph.initializer:
        if tensor.name in scales:
            np.testing.assert_array_equal(numpy_helper.to_array(tensor), scales[tensor.name])
    assert median_distance(ppocr_cls, compensated.model, held_out) < 0.75 * median_distance(ppocr_cls, plain.model,
                                                                                            held_out)


def test_a_second_lowering_reuses_the_rounded_weights(ppocr_cls: onnx.ModelProto) -> None:
    run = CountingRun()
    calibration = Calibration([samples.feeds("ppocr-cls", 1000 + i) for i in range(2)], run)
    first = quantize(ppocr_cls, "int8", calibration=calibration)
    calls = run.calls
    kept = frozenset(first.nodes[:3])
    again = quantize(ppocr_cls, "int8", kept, calibration=calibration)
    assert run.calls == calls == 2
    reread = {t.name: numpy_helper.to_array(t) for t in again.model.graph.initializer if t.name.endswith("__int8")}
    for tensor in first.model.graph.initializer:
        if tensor.name in reread:
            np.testing.assert_array_equal(numpy_helper.to_array(tensor), reread[tensor.name])
    assert len(reread) < len([t for t in first.model.graph.initializer if t.name.endswith("__int8")])
