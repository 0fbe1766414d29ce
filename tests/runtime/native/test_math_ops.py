"""The trigonometric and hyperbolic Unary kinds, Mish, the vectorized activations and Softmax, Shrink, IsNaN, IsInf and
BitwiseNot, and the bitwise Binary kinds (BitShift, BitwiseAnd, BitwiseOr, BitwiseXor) on the `cpu` provider against
onnxruntime, on single-node models over the whole domain of each op: within 2e-6 relative for floats (with NaN and
infinity where onnxruntime has them), exact for integer and bool results."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

from edgepack.runtime.providers import PROVIDERS

RNG = np.random.default_rng(11)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)


def single_node(op: str, feeds: dict[str, np.ndarray], opset: int = 18, **attributes: object) -> onnx.ModelProto:
    """A model of one `op` node reading the model inputs `feeds`."""
    node = helper.make_node(op, list(feeds), ["y"], **attributes)
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for name, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The output of the cpu provider and of onnxruntime."""
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(["y"], feeds)[0]
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    return ours, expected


def max_relative_error(ours: np.ndarray, expected: np.ndarray) -> float:
    """The largest |ours - expected| / |expected| over finite expected values (0 where both are 0); NaN and the
    infinities must sit where onnxruntime has them."""
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(ours[~finite], expected[~finite])
    a, b = ours[finite].astype(np.float64), expected[finite].astype(np.float64)
    scale = np.where(b == 0.0, 1.0, np.abs(b))
    return float((np.abs(a - b) / scale).max(initial=0.0))


def spread(low: float, high: float, count: int = 10_000) -> np.ndarray:
    return np.linspace(low, high, count, dtype=np.float32)


def both_signs(low: float, high: float, count: int = 5_000) -> np.ndarray:
    """Magnitudes from `low` to `high` spaced by ratio, with both signs."""
    magnitudes = np.geomspace(low, high, count).astype(np.float32)
    return np.concatenate([magnitudes, -magnitudes])


FLOAT_CASES = {
    "Sin": np.concatenate([spread(-20, 20), both_signs(20, 3e38), SPECIAL]),
    "Cos": np.concatenate([spread(-20, 20), both_signs(20, 3e38), SPECIAL]),
    "Tan": np.concatenate([spread(-20, 20), both_signs(20, 3e38), SPECIAL]),
    "Asin": np.concatenate([spread(-1, 1), both_signs(1e-30, 1e-3), [1.5, -2.0], SPECIAL]),
    "Acos": np.concatenate([spread(-1, 1), both_signs(1e-30, 1e-3), [1.5, -2.0], SPECIAL]),
    "Atan": np.concatenate([spread(-50, 50), both_signs(1e-30, 3e38), SPECIAL]),
    "Sinh": np.concatenate([spread(-100, 100), both_signs(1e-30, 1.0), SPECIAL]),
    "Cosh": np.concatenate([spread(-100, 100), SPECIAL]),
    "Asinh": np.concatenate([spread(-20, 20), both_signs(1e-30, 3e38), SPECIAL]),
    "Acosh": np.concatenate([spread(1, 20), np.geomspace(1, 3e38, 5_000, dtype=np.float32), [0.5, -3.0], SPECIAL]),
    "Atanh": np.concatenate([spread(-1, 1), both_signs(1e-30, 1e-3), [1.5, -2.0], SPECIAL]),
    "Erf": np.concatenate([spread(-5, 5, 10_001), both_signs(1e-30, 1e30, 1_001), SPECIAL]),
    "Log": np.concatenate([spread(0, 3, 10_001), both_signs(1e-45, 3e38), SPECIAL]),
    "Sqrt": np.concatenate([spread(0, 100, 10_001), both_signs(1e-45, 3e38), SPECIAL]),
    "Abs": np.concatenate([spread(-3, 3, 1_001), both_signs(1e-45, 3e38), SPECIAL]),
    "Neg": np.concatenate([spread(-3, 3, 1_001), both_signs(1e-45, 3e38), SPECIAL]),
    "Reciprocal": np.concatenate([spread(-3, 3, 1_000), both_signs(1e-37, 3e37), SPECIAL]),
    "Mish": np.concatenate([spread(-80, 30), both_signs(1e-30, 1.0), [1e4, 3e38, np.nan, np.inf, 0.0]]),
}


@pytest.mark.parametrize("op", FLOAT_CASES)
def test_float_kinds_agree_with_onnxruntime_over_their_domain(op: str) -> None:
    x = FLOAT_CASES[op].astype(np.float32)
    ours, expected = run_both(single_node(op, {"x": x}), {"x": x})
    assert max_relative_error(ours, expected) <= 2e-6


ACTIVATIONS = {"Sigmoid": {}, "HardSwish": {}, "HardSigmoid": {"alpha": 0.25, "beta": 0.4},
               "LeakyRelu": {"alpha": 0.1}, "Gelu": {}}
"""Activations whose vector loops take 8 or 16 lanes at a time (Sigmoid's exp of -|x| clamped below) and the rest one
by one: an odd count, far tails and the special values."""


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_activations_agree_with_onnxruntime_within_absolute_error(op: str) -> None:
    """Within 1e-6 of onnxruntime times max(1, |x|): their results near 0 are products of rounded terms, which a
    relative error would magnify (onnxruntime's Sigmoid is 0 below -80, ours about 1.2e-38)."""
    x = np.concatenate([spread(-30, 30, 10_001), both_signs(1e-30, 1e30, 1_001), SPECIAL]).astype(np.float32)
    ours, expected = run_both(single_node(op, {"x": x}, opset=20, **ACTIVATIONS[op]), {"x": x})
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(ours[~finite], expected[~finite])
    error = np.abs(ours[finite].astype(np.float64) - expected[finite]) / np.maximum(1.0, np.abs(x[finite]))
    assert float(error.max()) <= 1e-6


def test_gelu_tanh_agrees_with_onnxruntime_within_absolute_error() -> None:
    """Gelu with approximate="tanh" (x times the logistic function of 2u in vector lanes), as the activations
    above."""
    x = np.concatenate([spread(-30, 30, 10_001), both_signs(1e-30, 1e30, 1_001), SPECIAL]).astype(np.float32)
    ours, expected = run_both(single_node("Gelu", {"x": x}, opset=20, approximate="tanh"), {"x": x})
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(ours[~finite], expected[~finite])
    error = np.abs(ours[finite].astype(np.float64) - expected[finite]) / np.maximum(1.0, np.abs(x[finite]))
    assert float(error.max()) <= 1e-6


SOFTMAX_SHAPES = [((40, 6625), -1), ((3, 7), 1), ((2, 37, 5), 1), ((4, 1, 9), -1), ((6, 45), -1), ((5, 32), 1),
                  ((1, 16, 4, 43), 1), ((2, 9, 33), 1)]
"""Rows along the last axis (their peaks and exps in vector lanes, odd lengths leaving a tail), and along an inner
axis: fewer positions than a vector's lanes, or whole vectors of positions (a YOLO head's 16 bins over 4 x 43) then
a tail."""


def logits(shape: tuple[int, ...]) -> np.ndarray:
    """Spread logits with -inf and outliers 150 above the rest (so that a peak missed overflows the exps)."""
    x = (RNG.standard_normal(shape) * 8).astype(np.float32)
    x.reshape(-1)[::11] = -np.inf
    x.reshape(-1)[5::23] = 150.0
    return x


@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_SHAPES)
def test_softmax_agrees_with_onnxruntime(shape: tuple[int, ...], axis: int) -> None:
    """Within 1e-6 absolute, NaN where onnxruntime has it."""
    x = logits(shape)
    ours, expected = run_both(single_node("Softmax", {"x": x}, axis=axis), {"x": x})
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(("shape", "axis"), SOFTMAX_SHAPES)
def test_log_softmax_agrees_with_onnxruntime(shape: tuple[int, ...], axis: int) -> None:
    """Within 1e-6 relative and 1e-5 absolute (the outputs reach -300), -inf where the logit is -inf."""
    x = logits(shape)
    ours, expected = run_both(single_node("LogSoftmax", {"x": x}, axis=axis), {"x": x})
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("attributes", [{}, {"lambd": 1.5}, {"lambd": 1.5, "bias": 1.5}, {"lambd": 0.0, "bias": -2.0}])
def test_shrink_with_its_attributes(attributes: dict[str, float]) -> None:
    x = np.concatenate([spread(-5, 5, 1001), SPECIAL])
    ours, expected = run_both(single_node("Shrink", {"x": x}, **attributes), {"x": x})
    assert max_relative_error(ours, expected) <= 2e-6


@pytest.mark.parametrize(("op", "attributes"), [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                                                ("IsInf", {"detect_positive": 0})])
def test_isnan_and_isinf_are_exact(op: str, attributes: dict[str, int]) -> None:
    x = np.concatenate([RNG.standard_normal(100).astype(np.float32), SPECIAL, -SPECIAL, [3.4028235e38, -1e-45]])
    x = x.astype(np.float32).reshape(4, -1)
    ours, expected = run_both(single_node(op, {"x": x}, **attributes), {"x": x})
    np.testing.assert_array_equal(ours, expected)
    assert ours.any() and not ours.all()


BITS = ["uint8", "int8", "int32", "int64"]


def integers(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Values over the whole range of `dtype`."""
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("dtype", BITS)
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_binary_kinds_broadcast_and_are_exact(op: str, dtype: str) -> None:
    feeds = {"a": integers((3, 4, 5), dtype), "b": integers((4, 1), dtype)}
    ours, expected = run_both(single_node(op, feeds), feeds)
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("dtype", BITS)
def test_bitwise_not_is_exact(dtype: str) -> None:
    x = integers((7, 9), dtype)
    ours, expected = run_both(single_node("BitwiseNot", {"x": x}), {"x": x})
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("dtype", BITS)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shifts_are_exact_with_signed_and_out_of_range_amounts(direction: str, dtype: str) -> None:
    """Opset 28's BitShift: arithmetic right shifts of signed values, and amounts below 0 or of the width or more
    (for uint8 only amounts below the width, onnxruntime's own limit)."""
    width = np.iinfo(dtype).bits
    low, high = (0, width - 1) if dtype == "uint8" else (-3, width + 3)
    feeds = {"a": integers((6, 50), dtype), "b": RNG.integers(low, high, (1, 50), endpoint=True).astype(dtype)}
    ours, expected = run_both(single_node("BitShift", feeds, opset=28, direction=direction), feeds)
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "int16", "uint8"])
def test_mod_takes_the_sign_of_the_divisor_or_with_fmod_of_the_dividend(dtype: str, fmod: int) -> None:
    """Mod on every sign pair, infinities and zeros among the float divisors (exact, NaN where NaN)."""
    if dtype.startswith("float"):
        a = np.array([5.5, -5.5, 5.5, -5.5, 3.0, -3.0, 0.0, 7.25, np.inf], dtype)
        b = np.array([2.0, 2.0, -2.0, -2.0, np.inf, np.inf, 3.0, 0.5, 2.0], dtype)
    else:
        a, b = integers((40,), dtype), integers((40,), dtype)
        b[b == 0] = 1
        if dtype.startswith("int"):
            b[b == -1] = 3
    feeds = {"a": a, "b": b}
    ours, expected = run_both(single_node("Mod", feeds, opset=28, fmod=fmod), feeds)  # float fmod 0: opset 28
    np.testing.assert_array_equal(ours, expected)
