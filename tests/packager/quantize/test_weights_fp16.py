"""fp16 weight storage: fp32 weights become fp16 plus a Cast, the graph computes what it did on rounded weights,
kept nodes keep fp32 weights, and weights inside If bodies are lowered too."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.quantize import MIN_ELEMENTS, quantize
from edgepack.packager.slim import slim
from edgepack.runtime.graph_protos import iter_graph_protos
from edgepack.runtime.model_file import load_model
from tests.oracle import run_onnxruntime


def slimmed(name: str) -> onnx.ModelProto:
    model, _ = slim(check_model(load_model(samples.path(name)).model, name))
    return model


def rounded(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its float weights of MIN_ELEMENTS or more rounded to fp16 and stored back as fp32: what fp16
    storage must compute."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for graph in iter_graph_protos(copy.graph):
        for tensor in graph.initializer:
            if tensor.data_type == TensorProto.FLOAT and np.prod(tensor.dims) >= MIN_ELEMENTS:
                array = numpy_helper.to_array(tensor).astype(np.float16).astype(np.float32)
                tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))
    return copy


def float_bytes(model: onnx.ModelProto, data_type: int) -> int:
    return sum(int(np.prod(t.dims)) for g in iter_graph_protos(model.graph) for t in g.initializer
               if t.data_type == data_type)


@pytest.mark.parametrize("name", ["ppocr-cls", "tiny-transformer", "silero-vad-16k-op15"])
def test_fp16_weights_compute_what_the_model_computes_on_rounded_weights(name: str) -> None:
    model = slimmed(name)
    result = quantize(model, "fp16")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.tensors > 0 and result.nodes
    assert float_bytes(result.model, TensorProto.FLOAT16) > 0.9 * float_bytes(model, TensorProto.FLOAT)
    feeds = samples.feeds(name)
    expected, actual = run_onnxruntime(rounded(model), feeds), run_onnxruntime(result.model, feeds)
    for key, value in expected.items():
        np.testing.assert_allclose(actual[key], value, rtol=1e-6, atol=1e-6, err_msg=key)


def test_kept_nodes_keep_their_fp32_weights() -> None:
    model = slimmed("tiny-cnn")
    lowered = quantize(model, "fp16")
    keep = lowered.nodes[0]
    weights_of_kept = {n for n in next(node for node in model.graph.node if node.name == keep).input}
    partial = quantize(model, "fp16", frozenset({keep}))
    assert keep not in partial.nodes and len(partial.nodes) == len(lowered.nodes) - 1
    kept_fp32 = {t.name for t in partial.model.graph.initializer if t.data_type == TensorProto.FLOAT}
    assert weights_of_kept & {t.name for t in model.graph.initializer} <= kept_fp32


def test_weights_inside_if_bodies_are_lowered() -> None:
    weight = np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)
    branch = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["out"], name="matmul")], "branch", [],
                               [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                               initializer=[numpy_helper.from_array(weight, "w")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["same"], name="same")], "other", [],
                              [helper.make_tensor_value_info("same", TensorProto.FLOAT, None)])
    graph = helper.make_graph([helper.make_node("If", ["flag"], ["y"], name="if", then_branch=branch,
                                                else_branch=other)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    result = quantize(model, "fp16")
    assert result.nodes == ["if"] and result.tensors == 1
    body = next(a.g for a in result.model.graph.node[-1].attribute if a.name == "then_branch")
    assert [t.data_type for t in body.initializer] == [TensorProto.FLOAT16]
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4), "flag": np.array(True)}
    np.testing.assert_allclose(run_onnxruntime(result.model, feeds)["y"], run_onnxruntime(rounded(model), feeds)["y"],
                               rtol=1e-6)


def test_small_tensors_and_fp32_mode_are_left_alone() -> None:
    model = slimmed("tiny-if")  # its only weights are 8-element scales
    assert quantize(model, "fp16").tensors == 0
    untouched = quantize(model, "fp32")
    assert untouched.tensors == 0 and not untouched.nodes
