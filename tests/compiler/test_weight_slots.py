"""Weight slots in the lowering: a quantized weight read by several ops is expanded once, at open, and every reader
gets that one float32 tensor; plans that dequantize per call, and WebGPU plans, have no open ops."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession
from tests.oracle import run_onnxruntime


def shared_weight_model() -> onnx.ModelProto:
    """Two Convs reading one int8 per-channel weight through one DequantizeLinear."""
    rng = np.random.default_rng(3)
    weights = [numpy_helper.from_array(rng.integers(-127, 128, (4, 4, 3, 3)).astype(np.int8), "q"),
               numpy_helper.from_array((rng.random(4) * 0.02 + 0.01).astype(np.float32), "s")]
    nodes = [helper.make_node("DequantizeLinear", ["q", "s"], ["w"], axis=0),
             helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_a_shared_weight_is_expanded_once_for_all_its_readers() -> None:
    model = shared_weight_model()
    plan = lower_to_plan(model, {"x": (1, 4, 6, 6)})
    assert [op.kind for op in plan.ops[:plan.open_ops]] == ["ExpandWeight"]
    expanded = plan.ops[0].outputs[0]
    assert [op.inputs[1] for op in plan.ops if op.kind == "Conv"] == [expanded, expanded]
    x = np.random.default_rng(4).standard_normal((1, 4, 6, 6)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = NativeSession(epk.write(plan)).run({"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_per_call_and_webgpu_plans_have_no_open_ops() -> None:
    for options in ({"expand_weights": False}, {"packed_weights": False}):
        plan = lower_to_plan(shared_weight_model(), {"x": (1, 4, 6, 6)}, **options)
        assert plan.open_ops == 0 and "ExpandWeight" not in [op.kind for op in plan.ops]
        assert [plan.tensors[op.inputs[1]].dtype for op in plan.ops if op.kind == "Conv"] == ["int8", "int8"]
