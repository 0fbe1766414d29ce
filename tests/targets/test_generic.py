"""The generic target: a weight-only int8 bundle tells onnxruntime how to run it at float speed, and the setting
it records does fold the int8 weights at load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import edgepack
from edgepack import samples
from edgepack.targets.generic import onnxruntime_session_config
from tests.oracle import run_onnxruntime

NAME = "ppocr-cls"


def optimized_ops(model_path: Path, config: dict[str, str], folder: Path) -> dict[str, int]:
    """Op types of the graph onnxruntime runs after its optimizations, with `config` set."""
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(folder / "optimized.onnx")
    for key, value in config.items():
        options.add_session_config_entry(key, value)
    model = onnx.load(model_path)
    model.ir_version = min(model.ir_version, 10)
    ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ops: dict[str, int] = {}
    for node in onnx.load(folder / "optimized.onnx").graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    return ops


def test_weight_only_bundle_records_the_setting_that_folds_its_int8_weights(tmp_path: Path) -> None:
    feeds = samples.feeds(NAME)
    result = edgepack.build(samples.path(NAME), "generic", tmp_path / "int8", weights="int8", sample_inputs=[feeds])
    manifest = json.loads((result.bundle_dir / "manifest.json").read_text())
    [partition] = manifest["partitions"]
    config = partition["onnxruntime_session_config"]
    assert config == {"session.disable_quant_qdq": "1"}
    model_path = result.bundle_dir / partition["artifact"]
    quantized = manifest["quantization"]["quantized_tensors"]  # mixed precision may keep some in fp32
    assert quantized > 20
    assert optimized_ops(model_path, {}, tmp_path).get("DequantizeLinear", 0) >= quantized
    assert optimized_ops(model_path, config, tmp_path).get("DequantizeLinear", 0) == 0
    expected = run_onnxruntime(samples.path(NAME), feeds)
    model = onnx.load(model_path)
    model.ir_version = min(model.ir_version, 10)
    options = ort.SessionOptions()
    for key, value in config.items():
        options.add_session_config_entry(key, value)
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    [actual] = session.run(None, feeds)
    [reference] = expected.values()
    assert np.max(np.abs(actual - reference)) < 0.05  # int8 weights on a softmax output


def test_float_and_integer_compute_models_need_no_setting() -> None:
    source = onnx.load(samples.path(NAME))
    assert onnxruntime_session_config(source) == {}
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    nodes = [onnx.helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),
             onnx.helper.make_node("DequantizeLinear", ["q", "s"], ["y"])]
    scale = onnx.numpy_helper.from_array(np.array(0.1, np.float32), "s")
    static = onnx.helper.make_model(onnx.helper.make_graph(nodes, "g", [x], [y], [scale]))
    assert onnxruntime_session_config(static) == {}


def test_dynamic_int8_bundle_folds_its_weights_and_keeps_its_integer_matmuls(tmp_path: Path) -> None:
    """Dynamic int8 on PP-OCR cls leaves its Convs on int8 weights read through DequantizeLinear; with the setting
    they fold while onnxruntime still fuses the Gemm's DynamicQuantizeLinear + MatMulInteger."""
    result = edgepack.build(samples.path(NAME), "generic", tmp_path / "dynamic", weights="int8",
                            activations="int8", accept_fidelity_loss=True)
    [partition] = result.manifest["partitions"]
    config = partition["onnxruntime_session_config"]
    ops = optimized_ops(result.bundle_dir / partition["artifact"], config, tmp_path)
    assert ops.get("DequantizeLinear", 0) == 0
    int8_compute = result.manifest["quantization"]["activation_form"].startswith("dynamic int8")
    assert ops.get("DynamicQuantizeMatMul", 0) == int(int8_compute)
