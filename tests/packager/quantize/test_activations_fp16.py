"""fp16 compute: every sample model built with fp16 weights and activations keeps cosine >= 0.9999 against the fp32
source (run by onnxruntime), computing in fp16 on `reference` with fp32 inputs and outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import build, samples
from edgepack.packager.quantize import quantize
from edgepack.runtime import Session
from edgepack.runtime.graph_protos import iter_graph_protos
from edgepack.verify import compare
from tests.oracle import run_onnxruntime
from tests.small_feeds import small_feeds, small_shapes


def fp16_values(model: onnx.ModelProto) -> tuple[int, int]:
    """(fp16, fp32) value counts of the model and its subgraphs after shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = [v.type.tensor_type.elem_type for g in iter_graph_protos(inferred.graph) for v in g.value_info]
    return types.count(TensorProto.FLOAT16), types.count(TensorProto.FLOAT)


@pytest.mark.parametrize("name", samples.names())
def test_fp16_build_keeps_cosine_09999_on_every_sample(name: str, tmp_path: Path) -> None:
    feeds = small_feeds(name)
    result = build(samples.path(name), "generic", tmp_path, weights="fp16", activations="fp16",
                   sample_inputs=[feeds], input_shapes=small_shapes(name))
    model = onnx.load(result.bundle_dir / "model.onnx")
    half, single = fp16_values(model)
    assert half > single, f"{half} fp16 values against {single} fp32: the bundle does not compute in fp16"
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == \
        [i.type.tensor_type.elem_type for i in onnx.load(samples.path(name)).graph.input]
    expected = run_onnxruntime(samples.path(name), feeds)
    actual = Session(result.bundle_dir).run(feeds)
    for output, value in expected.items():
        assert actual[output].dtype == value.dtype
        assert compare(value, actual[output])["cosine"] >= 0.9999, output


def single_op(node: onnx.NodeProto, inputs: list[onnx.ValueInfoProto], initializers: list[onnx.TensorProto],
              output_shape: list[int]) -> onnx.ModelProto:
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_resize_scales_stay_fp32_and_the_image_goes_fp16() -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], "resize", mode="nearest")
    model = single_op(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                      [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")], [1, 1, 4, 4])
    lowered = quantize(model, "fp16", activations="fp16").model
    onnx.checker.check_model(lowered, full_check=True)
    tensors = {t.name: t.data_type for t in lowered.graph.initializer}
    assert tensors["scales"] == TensorProto.FLOAT
    resize = next(n for n in lowered.graph.node if n.op_type == "Resize")
    assert resize.input[0] == "x__fp16"
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(Session(lowered, providers=["reference"]).run({"x": x})["y"],
                                  run_onnxruntime(model, {"x": x})["y"])


def test_casts_to_float_and_constant_of_shape_values_become_fp16() -> None:
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["ones"], "fill",
                              value=numpy_helper.from_array(np.array([1.5], np.float32))),
             helper.make_node("Cast", ["n"], ["n_float"], "cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["ones", "n_float"], ["y"], "mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("n", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                              [numpy_helper.from_array(np.array([3], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    lowered = quantize(model, "fp16", activations="fp16").model
    onnx.checker.check_model(lowered, full_check=True)
    by_name = {n.name: n for n in lowered.graph.node}
    assert by_name["cast"].attribute[0].i == TensorProto.FLOAT16
    assert by_name["fill"].attribute[0].t.data_type == TensorProto.FLOAT16
    out = Session(lowered, providers=["reference"]).run({"n": np.array([1, 2, 3], np.int64)})["y"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1.5, 3.0, 4.5])


def test_large_constants_are_clamped_to_the_fp16_range() -> None:
    node = helper.make_node("Add", ["x", "mask"], ["y"], "add")
    mask = np.array([-1e9, 0.0, 1e-12, 2.0], np.float32)
    model = single_op(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                      [numpy_helper.from_array(mask, "mask")], [4])
    lowered = quantize(model, "fp16", activations="fp16").model
    stored = numpy_helper.to_array(next(t for t in lowered.graph.initializer if t.name == "mask"))
    assert stored.dtype == np.float16 and np.all(np.isfinite(stored))
    assert stored[0] == np.finfo(np.float16).min and stored[2] > 0 and stored[3] == 2.0


def test_kept_nodes_compute_in_fp32_between_casts() -> None:
    model = samples.tiny.tiny_transformer(hidden=64, layers=1)
    candidates = quantize(model, "fp16", activations="fp16").nodes
    kept = candidates[0]
    lowered = quantize(model, "fp16", frozenset([kept]), activations="fp16").model
    onnx.checker.check_model(lowered, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(lowered)
    types = {v.name: v.type.tensor_type.elem_type for v in [*inferred.graph.value_info, *inferred.graph.input]}
    node = next(n for n in lowered.graph.node if n.name == kept)
    assert all(types.get(name, TensorProto.FLOAT) == TensorProto.FLOAT for name in [*node.input, *node.output]
               if name), "a kept node reads or writes fp16"
    assert kept not in quantize(model, "fp16", frozenset([kept]), activations="fp16").nodes
