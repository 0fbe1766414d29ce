"""int8 (per output channel), int4 (blocks of 32, float16 scales) and fp16 weights, as edgepack's quantizer writes
them, stay quantized in the plan and run on the C core, expanded when a session opens (the default) or dequantized
at each call: every sample matches `reference` running the same quantized model, the plan's weights shrink to about
0.27x / 0.16x / 0.5x of fp32, and the loader refuses broken quantized records."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import version_converter

from edgepack import samples
from edgepack.compiler.lower import lower_to_plan
from edgepack.packager.quantize import quantize
from edgepack.packager.slim import slim
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.native.build import runner
from edgepack.runtime.native.epk import WEIGHT, Plan
from edgepack.runtime.native.op_contract import contract
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, relative_error, slimmed
from .test_hostile_plans import BOUNDS, OP, TENSOR

RATIO = {"int8": 0.30, "int4": 0.17, "fp16": 0.56}
WEIGHT_DTYPE = {"int8": "int8", "int4": "int4", "fp16": "float16"}
"""The most a quantized plan's weight bytes may be of the fp32 plan's (the quantizer's targets are 0.27 and 0.16 of
the model's weights; small models keep relatively more fp32 biases)."""


@cache
def at_opset_21(name: str) -> onnx.ModelProto:
    return slim(version_converter.convert_version(slimmed(name), 21))[0]


@cache
def quantized(name: str, weights: str) -> onnx.ModelProto:
    return quantize(at_opset_21(name), weights).model


@cache
def expected(name: str, weights: str) -> dict[str, np.ndarray]:
    return PROVIDERS["reference"].compile(quantized(name, weights), {}).run(feeds(name))


def shapes(name: str) -> dict[str, tuple[int, ...]]:
    return {k: v.shape for k, v in feeds(name).items()}


def per_call_plan(name: str, weights: str) -> Plan:
    """The plan whose ops dequantize their weights at each call (no ExpandWeight at open)."""
    return lower_to_plan(quantized(name, weights), shapes(name), expand_weights=False)


def weight_bytes(plan: Plan) -> int:
    return sum(t.nbytes for t in plan.tensors if t.location == WEIGHT)


def matches(provider: str, name: str, weights: str) -> None:
    outputs = PROVIDERS[provider].compile(quantized(name, weights), {}).run(feeds(name))
    for key, value in expected(name, weights).items():
        assert outputs[key].shape == value.shape
        assert relative_error(value, outputs[key]) <= TOLERANCE, key


@pytest.mark.parametrize("weights", ["int8", "int4"])
@pytest.mark.parametrize("name", samples.names())
def test_quantized_sample_matches_reference_on_cpu(name: str, weights: str) -> None:
    matches("cpu", name, weights)


@pytest.mark.parametrize("weights", ["int8", "int4", "fp16"])
@pytest.mark.parametrize("name", ["tiny-cnn", "tiny-transformer", "ppocr-cls", "silero-vad-16k-sequence"])
def test_weights_dequantized_per_call_match_reference_on_cpu(name: str, weights: str) -> None:
    plan = per_call_plan(name, weights)
    assert plan.open_ops == 0 and any(len(op.inputs) > 3 and op.kind in ("Conv", "PackedMatMul", "MatMul", "LSTM")
                                      and plan.tensors[op.inputs[1]].dtype == WEIGHT_DTYPE[weights] for op in plan.ops)
    outputs = NativeSession(epk.write(plan)).run(feeds(name))
    for key, value in expected(name, weights).items():
        assert relative_error(value, outputs[key]) <= TOLERANCE, key


@pytest.mark.parametrize("name", [name for name in samples.names() if name != "ppocr-det"])
def test_fp16_weight_sample_matches_reference_on_cpu(name: str) -> None:
    matches("cpu", name, "fp16")


@pytest.mark.parametrize("weights", ["int8", "int4", "fp16"])
@pytest.mark.parametrize("name", ["tiny-cnn", "tiny-transformer", "ppocr-cls", "silero-vad-16k-sequence"])
def test_quantized_plan_keeps_the_quantized_weights(name: str, weights: str) -> None:
    plan = lower_to_plan(quantized(name, weights), shapes(name))
    assert weight_bytes(plan) <= RATIO[weights] * weight_bytes(lower_to_plan(at_opset_21(name), shapes(name)))
    assert any(t.dtype == WEIGHT_DTYPE[weights] and t.location == WEIGHT for t in plan.tensors)


@pytest.mark.parametrize("provider, name, weights", [
    ("neon", "tiny-cnn", "int4"), ("neon", "tiny-transformer", "int8"), ("neon", "tiny-cnn", "fp16"),
    ("wasm", "tiny-cnn", "int8"), ("wasm", "tiny-transformer", "int4"), ("wasm", "tiny-transformer", "fp16")])
def test_quantized_sample_matches_reference_emulated(provider: str, name: str, weights: str) -> None:
    if PROVIDERS[provider].missing() is not None:
        pytest.skip(str(PROVIDERS[provider].missing()))
    matches(provider, name, weights)


def quantized_op(plan: Plan) -> epk.Op:
    return next(op for op in plan.ops if op.kind == "Conv" and len(op.inputs) == 4)


def set_scale_shape(plan: Plan) -> None:
    scale = plan.tensors[quantized_op(plan).inputs[3]]
    scale.shape = (scale.shape[0], scale.shape[1] - 1, scale.shape[2])
    scale.data = np.ascontiguousarray(scale.data[:, :-1])


def set_block(plan: Plan) -> None:
    quantized_op(plan).params[-1] = 16


def drop_scale(plan: Plan) -> None:
    quantized_op(plan).inputs[3] = None


def weight_in_arena(plan: Plan) -> None:
    plan.tensors[quantized_op(plan).inputs[1]].location = epk.ARENA


def nibbles_past_the_weights(plan: Plan) -> None:
    """The record claims more int4 values than the blob holds after the weight's offset."""
    plan.tensors[quantized_op(plan).inputs[1]].shape = (2 * 10**8,)


def scale_read_by_another_op(plan: Plan) -> None:
    """The float16 scales fed to a kernel that takes only the core dtypes (not `any_dtype` in ops.toml)."""
    quantized = quantized_op(plan)
    op = next(op for op in plan.ops if op is not quantized and not contract().op(op.kind).any_dtype)
    op.inputs[0] = quantized.inputs[3]


HOSTILE: dict[str, tuple[Callable[[Plan], None], int]] = {
    "blocked scales miss a block": (set_scale_shape, OP),
    "block size differs from the scales": (set_block, OP),
    "scales absent": (drop_scale, OP),
    "int4 weight in the arena": (weight_in_arena, TENSOR),
    "int4 nibbles past the weights": (nibbles_past_the_weights, BOUNDS),
    "float16 scales read by a kernel of the core dtypes": (scale_read_by_another_op, TENSOR),
}


def assert_refused_once_broken(plan: Plan, mutate: Callable[[Plan], None], status: int) -> None:
    """`plan` opens; once `mutate` has broken it, the loader refuses it with `status`."""
    NativeSession(epk.write(plan))
    mutate(plan)
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert caught.value.status == status, str(caught.value)


@pytest.mark.parametrize("case", HOSTILE)
def test_broken_quantized_record_is_refused(case: str) -> None:
    assert_refused_once_broken(per_call_plan("tiny-cnn", "int4"), *HOSTILE[case])


def test_per_channel_int8_scales_must_match_the_channels() -> None:
    plan = per_call_plan("tiny-cnn", "int8")
    op = next(op for op in plan.ops if op.kind == "Conv" and len(op.inputs) == 4)
    scale = plan.tensors[op.inputs[3]]
    scale.shape, scale.data = (scale.shape[0] - 1,), scale.data[:-1]
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert caught.value.status == OP and "scale" in str(caught.value)


def test_float16_weight_takes_no_quantization_words() -> None:
    plan = per_call_plan("tiny-cnn", "fp16")
    op = next(op for op in plan.ops if op.kind == "Conv" and len(op.inputs) == 4)
    assert plan.tensors[op.inputs[1]].dtype == "float16" and op.inputs[3] is None and op.params[-2:] == [0, 0]
    NativeSession(epk.write(plan))
    op.params[-2] = 1
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert caught.value.status == OP and "scales for a float weight" in str(caught.value)


@pytest.mark.parametrize("expand", [True, False], ids=["at open", "per call"])
def test_quantized_plan_runs_clean_under_the_sanitizers(tmp_path: Path, expand: bool) -> None:
    plan = lower_to_plan(quantized("tiny-cnn", "int4"), shapes("tiny-cnn"), expand_weights=expand)
    assert bool(plan.open_ops) == expand
    (tmp_path / "plan.epk").write_bytes(epk.write(plan))
    (value,) = feeds("tiny-cnn").values()
    np.save(tmp_path / "in0.npy", value)
    proc = subprocess.run([str(runner(sanitized=True)), str(tmp_path / "plan.epk"), str(tmp_path),
                           str(tmp_path / "in0.npy")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr
    (reference,) = expected("tiny-cnn", "int4").values()
    assert relative_error(reference, np.load(tmp_path / "0.npy")) <= TOLERANCE


@pytest.mark.parametrize("expand", [True, False], ids=["at open", "per call"])
def test_every_float16_weight_widens_exactly(expand: bool) -> None:
    """All 65,536 float16 bit patterns as a MatMul weight times 1 (the vector widening and its scalar tail), widened
    when the session opens or at each call: each comes out as numpy widens it, infinities and NaNs included."""
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(1, -1)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Cast", ["w16"], ["w"], to=onnx.TensorProto.FLOAT),
         onnx.helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, halves.size])],
        [onnx.numpy_helper.from_array(halves, "w16")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 21)])
    plan = lower_to_plan(model, {"x": (1, 1)}, expand_weights=expand)
    reader = "ExpandWeight" if expand else "MatMul"
    assert any(plan.tensors[i].dtype == "float16" for op in plan.ops if op.kind == reader for i in op.inputs if
               i is not None)
    y = NativeSession(epk.write(plan)).run({"x": np.ones((1, 1), np.float32)})["y"]
    np.testing.assert_array_equal(y, halves.astype(np.float32))
