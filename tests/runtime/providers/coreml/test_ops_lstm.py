"""LSTM as MIL `lstm`: ONNX's iofc gates reordered to ifoz, the two biases summed, states reshaped between
(directions, batch, hidden) and (batch, directions * hidden); reverse outputs back in time order; batch-major
layout; fp16 inputs computed in fp32."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(20)
STEPS, BATCH, INPUT, HIDDEN = 5, 2, 3, 4


def lstm_case(direction: str = "forward", layout: int = 0, states: bool = True, dtype=np.float32, **attrs):
    directions = 2 if direction == "bidirectional" else 1
    x = RNG.standard_normal((STEPS, BATCH, INPUT) if layout == 0 else (BATCH, STEPS, INPUT)).astype(dtype)
    weights = {"W": RNG.standard_normal((directions, 4 * HIDDEN, INPUT)).astype(np.float32),
               "R": RNG.standard_normal((directions, 4 * HIDDEN, HIDDEN)).astype(np.float32),
               "B": RNG.standard_normal((directions, 8 * HIDDEN)).astype(np.float32)}
    feeds = {"x": x}
    if states:
        shape = (directions, BATCH, HIDDEN) if layout == 0 else (BATCH, directions, HIDDEN)
        feeds["h0"] = RNG.standard_normal(shape).astype(dtype)
        feeds["c0"] = RNG.standard_normal(shape).astype(dtype)
    weights = {k: v.astype(dtype) for k, v in weights.items()}
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0" if states else "", "c0" if states else ""],
                            ["y", "y_h", "y_c"], hidden_size=HIDDEN, direction=direction, layout=layout, **attrs)
    return one_node(node, feeds, weights, opset=14), feeds


def lstm_args(model) -> dict:
    [args] = [args for op, args in mil_ops(model) if op == "lstm"]
    return args


def test_gates_reordered_and_biases_summed() -> None:
    model, feeds = lstm_case()
    args = lstm_args(model)
    w = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "W")).reshape(4, HIDDEN, INPUT)
    np.testing.assert_array_equal(args["weight_ih"], w[[0, 2, 1, 3]].reshape(4 * HIDDEN, INPUT))
    assert args["direction"] == "forward" and args["output_sequence"] is True
    assert coreml_error(model, feeds) < FP32_TOLERANCE
    assert coreml_error(model, feeds, "fp16") < FP16_TOLERANCE


@pytest.mark.parametrize("direction", ["reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_directions_and_layouts(direction: str, layout: int) -> None:
    model, feeds = lstm_case(direction, layout)
    ops = [op for op, _ in mil_ops(model)]
    assert lstm_args(model)["direction"] == direction
    assert ("reverse" in ops) == (direction == "reverse")
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_zero_initial_states() -> None:
    model, feeds = lstm_case(states=False)
    args = lstm_args(model)
    assert not np.any(args["initial_h"]) and not np.any(args["initial_c"])
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_fp16_input_is_computed_in_fp32() -> None:
    model, feeds = lstm_case("bidirectional", dtype=np.float16)
    ops = [op for op, _ in mil_ops(model)]
    assert ops[0] == "cast" and ops[-1] == "cast"
    assert coreml_error(model, feeds) < FP16_TOLERANCE


@pytest.mark.parametrize("attrs", [{"clip": 1.0}, {"input_forget": 1},
                                   {"activations": ["Sigmoid", "Relu", "Tanh"]}])
def test_unsupported_attributes_are_refused(attrs) -> None:
    model, _ = lstm_case(**attrs)
    node = model.graph.node[0]
    assert PROVIDERS["coreml"].capability.refusal(node, {"": 14}, graph_values(model.graph)) is not None
