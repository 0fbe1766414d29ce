"""Elementwise converters: the MIL op each emits, and its outputs against `reference` in fp32 and fp16."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node, op_types

RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
POSITIVE = (np.abs(X) + 0.5).astype(np.float32)

BINARY = [("Add", "add"), ("Sub", "sub"), ("Mul", "mul"), ("Div", "real_div"), ("Max", "maximum"),
          ("Min", "minimum")]


@pytest.mark.parametrize(("op", "mil"), BINARY)
def test_binary_broadcasts_a_constant(op: str, mil: str) -> None:
    y = (RNG.standard_normal((3, 1)) + 2).astype(np.float32)
    model = one_node(helper.make_node(op, ["x", "y"], ["z"]), {"x": X}, {"y": y})
    assert op_types(model) == [mil]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_pow_of_two_inputs() -> None:
    model = one_node(helper.make_node("Pow", ["x", "y"], ["z"]), {"x": POSITIVE, "y": X})
    assert op_types(model) == ["pow"]
    assert coreml_error(model, {"x": POSITIVE, "y": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("op", "mil", "data"), [
    ("Relu", "relu", X), ("Sigmoid", "sigmoid", X), ("Tanh", "tanh", X), ("Exp", "exp", X),
    ("Sqrt", "sqrt", POSITIVE), ("Erf", "erf", X), ("Abs", "abs", X), ("Floor", "floor", X), ("Ceil", "ceil", X),
    ("Softsign", "softsign", X), ("Softplus", "softplus", X), ("Log", "log", POSITIVE), ("Neg", "mul", X),
    ("Reciprocal", "real_div", POSITIVE)])
def test_unary(op: str, mil: str, data: np.ndarray) -> None:
    model = one_node(helper.make_node(op, ["x"], ["y"]), {"x": data})
    assert op_types(model) == [mil]
    assert coreml_error(model, {"x": data}) < FP32_TOLERANCE


def test_log_has_no_epsilon() -> None:
    """MIL's log adds epsilon (1e-45 by default); ONNX's does not."""
    ops = mil_ops(one_node(helper.make_node("Log", ["x"], ["y"]), {"x": POSITIVE}))
    assert ops == [("log", {"epsilon": 0.0})]


@pytest.mark.parametrize(("node", "expected"), [
    (helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.3), [("leaky_relu", {"alpha": 0.3})]),
    (helper.make_node("Elu", ["x"], ["y"], alpha=0.7), [("elu", {"alpha": 0.7})]),
    (helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.25, beta=0.4),
     [("sigmoid_hard", {"alpha": 0.25, "beta": 0.4})]),
    (helper.make_node("HardSwish", ["x"], ["y"]), [("sigmoid_hard", {"alpha": 1 / 6, "beta": 0.5}), ("mul", {})]),
    (helper.make_node("ThresholdedRelu", ["x"], ["y"], alpha=0.2), [("thresholded_relu", {"alpha": 0.2})]),
    (helper.make_node("Gelu", ["x"], ["y"], approximate="tanh"), [("gelu", {"mode": "TANH_APPROXIMATION"})]),
])
def test_activation_attributes(node, expected) -> None:
    opset = 20 if node.op_type == "Gelu" else 17
    model = one_node(node, {"x": X}, opset=opset)
    ops = mil_ops(model)
    assert [op for op, _ in ops] == [op for op, _ in expected]
    for (_, got), (_, want) in zip(ops, expected):
        assert got.keys() >= want.keys()
        assert all(got[k] == pytest.approx(v, rel=1e-6) if isinstance(v, float) else got[k] == v
                   for k, v in want.items())
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("bounds", "mil"), [((-0.5, 0.7), "clip"), ((-0.5, None), "maximum"),
                                             ((None, 0.7), "minimum")])
def test_clip_bounds(bounds, mil) -> None:
    names = ["x", "low" if bounds[0] is not None else "", "high" if bounds[1] is not None else ""]
    weights = {n: np.float32(b) for n, b in zip(names[1:], bounds) if n}
    model = one_node(helper.make_node("Clip", names, ["y"]), {"x": X}, weights)
    assert op_types(model) == [mil]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


@pytest.mark.parametrize(("op", "mil"), [("Equal", "equal"), ("Greater", "greater"), ("Less", "less")])
def test_comparisons_give_bool(op: str, mil: str) -> None:
    y = np.round(X * 2) / 2
    model = one_node(helper.make_node(op, ["x", "y"], ["z"]), {"x": np.round(X * 2) / 2, "y": y.astype(np.float32)})
    assert op_types(model) == [mil]
    feeds = {"x": (np.round(X * 2) / 2).astype(np.float32), "y": y[::-1].copy().astype(np.float32)}
    assert coreml_error(model, feeds) == 0
