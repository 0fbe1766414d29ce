"""Where: MIL `select`, claimed with a constant condition (CoreML takes no bool inputs)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(18)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def test_select_with_a_constant_condition_and_branch() -> None:
    model = one_node(helper.make_node("Where", ["c", "x", "z"], ["y"]), {"x": X},
                     {"c": RNG.standard_normal((3, 4)) > 0, "z": np.float32(7)})
    assert [op for op, _ in mil_ops(model)] == ["select"]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_a_bool_input_condition_is_refused() -> None:
    model = one_node(helper.make_node("Where", ["c", "x", "z"], ["y"]), {"c": X > 0, "x": X, "z": X})
    node = model.graph.node[0]
    assert "constant" in PROVIDERS["coreml"].capability.refusal(node, {"": 17}, graph_values(model.graph))
