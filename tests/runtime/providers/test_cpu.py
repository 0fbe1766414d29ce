"""The `cpu` provider: Session use, a plan per input-shape signature, run-time If, honest claims on the sample
models, and the error for nodes the core cannot run. Numbers are compared with `reference` (max abs diff over
the output's scale <= 1e-4)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgepack import samples
from edgepack.compiler.lower import lower
from edgepack.runtime import Session
from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from tests.runtime.native.sample_plans import TOLERANCE, relative_error, slimmed


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return PROVIDERS["reference"].compile(model, {}).run(feeds)


def test_session_runs_a_model_file_on_cpu() -> None:
    path = samples.path("tiny-cnn")
    feeds = samples.feeds("tiny-cnn")
    outputs = Session(path, providers=["cpu"]).run(feeds)
    expected = reference(onnx.load(path), feeds)
    assert relative_error(expected["probs"], outputs["probs"]) <= TOLERANCE


def test_each_input_shape_gets_its_own_plan() -> None:
    model = slimmed("tiny-cnn")
    partition = PROVIDERS["cpu"].compile(model, {})
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        feeds = {"image": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)}
        outputs = partition.run(feeds)
        assert outputs["probs"].shape == (batch, 10)
        assert relative_error(reference(model, feeds)["probs"], outputs["probs"]) <= TOLERANCE
    assert len(partition.sessions) == 2


@pytest.mark.parametrize("use_relu", [True, False])
def test_if_condition_picks_the_branch_at_run_time(use_relu: bool) -> None:
    model = slimmed("tiny-if")
    partition = PROVIDERS["cpu"].compile(model, {})
    feeds = {**samples.feeds("tiny-if"), "use_relu": np.array(use_relu)}
    assert relative_error(reference(model, feeds)["y"], partition.run(feeds)["y"]) <= TOLERANCE
    other = {**feeds, "use_relu": np.array(not use_relu)}
    assert relative_error(reference(model, other)["y"], partition.run(other)["y"]) <= TOLERANCE
    assert len(partition.sessions) == 1


@pytest.mark.parametrize("name", samples.names())
def test_cpu_claims_the_sample_models_up_to_shape_inputs(name: str) -> None:
    """Claims are judged node by node on the unpinned graph: a shape input computed by a Shape subgraph is not a
    constant there, though the lowering folds it once input shapes are pinned (the sample tests run every model).
    Every other node is claimed."""
    inferred = onnx.shape_inference.infer_shapes(slimmed(name))
    values, opsets = graph_values(inferred.graph), model_opsets(inferred)
    refusals = [PROVIDERS["cpu"].capability.refusal(node, opsets, values) for node in inferred.graph.node]
    assert all(reason is None or "must be a constant" in reason for reason in refusals)


def test_nodes_the_core_cannot_run_are_listed_by_op_and_name() -> None:
    nodes = [helper.make_node("RandomNormalLike", ["x"], ["noise"], name="add_noise"),
             helper.make_node("Relu", ["noise"], ["y"], name="relu"),
             helper.make_node("ReverseSequence", ["x", "lengths"], ["z"], name="reverse_rows", batch_axis=0,
                              time_axis=1)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor("lengths", TensorProto.INT64, [2], [5, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(EdgepackError) as caught:
        lower(model)
    message = str(caught.value)
    assert "RandomNormalLike (add_noise)" in message and "ReverseSequence (reverse_rows)" in message
    assert "relu" not in message


def test_symbolic_input_dims_need_a_shape() -> None:
    with pytest.raises(EdgepackError, match="symbolic dims"):
        lower(slimmed("tiny-cnn"))


def test_dequantize_is_claimed_on_constant_weights_and_8_bit_run_time_values() -> None:
    """Constant int8 and int4 weights (with float32 or float16 scales) fold into weights; run-time int8 values are
    dequantized by a kernel; run-time int4 values are refused; a float16 value is cast like any other."""
    import ml_dtypes

    weights = [onnx.numpy_helper.from_array(np.ones((4, 2), np.int8), "q8"),
               onnx.numpy_helper.from_array(np.ones((4, 2), ml_dtypes.int4), "q4"),
               onnx.numpy_helper.from_array(np.ones((4, 2), np.uint8), "u8"),
               onnx.numpy_helper.from_array(np.ones(2, np.float32), "s32"),
               onnx.numpy_helper.from_array(np.ones((1, 2), np.float16), "s16")]
    nodes = [helper.make_node("DequantizeLinear", ["q8", "s32"], ["w8"], axis=1),
             helper.make_node("DequantizeLinear", ["q4", "s16"], ["w4"], axis=0, block_size=32),
             helper.make_node("DequantizeLinear", ["x", "s32"], ["wx"], axis=1),
             helper.make_node("DequantizeLinear", ["x4", "s32"], ["wx4"], axis=1),
             helper.make_node("DequantizeLinear", ["u8", "s32"], ["wu"], axis=1),
             helper.make_node("Cast", ["s16"], ["s16f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [4, 2]),
                                           helper.make_tensor_value_info("x4", TensorProto.INT4, [4, 2]),
                                           helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2])],
                              [helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes],
                              weights)
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    values, opsets = graph_values(model.graph), model_opsets(model)
    refusals = {n.output[0]: PROVIDERS["cpu"].capability.refusal(n, opsets, values) for n in model.graph.node}
    assert refusals["w8"] is None and refusals["w4"] is None and refusals["s16f"] is None
    assert refusals["wx"] is None and refusals["wu"] is None and refusals["hf"] is None
    assert "int8, uint8 or int32 values" in refusals["wx4"]
