"""MatMul: MIL `matmul` for 2-D, batched and broadcast operands, constant or not; 1-D operands are refused."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, one_node, op_types

RNG = np.random.default_rng(5)


@pytest.mark.parametrize(("x_shape", "y_shape"), [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 5))])
def test_inputs(x_shape, y_shape) -> None:
    feeds = {"x": RNG.standard_normal(x_shape).astype(np.float32), "y": RNG.standard_normal(y_shape).astype(np.float32)}
    model = one_node(helper.make_node("MatMul", ["x", "y"], ["z"]), feeds)
    assert op_types(model) == ["matmul"]
    assert coreml_error(model, feeds) < FP32_TOLERANCE


def test_constant_weight_broadcast_over_batch() -> None:
    x = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    model = one_node(helper.make_node("MatMul", ["x", "w"], ["z"]), {"x": x},
                     {"w": RNG.standard_normal((8, 3)).astype(np.float32)})
    assert op_types(model) == ["matmul"]
    assert coreml_error(model, {"x": x}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": x}, "fp16") < FP16_TOLERANCE


def test_one_dimensional_operand_is_refused() -> None:
    model = one_node(helper.make_node("MatMul", ["x", "y"], ["z"]),
                     {"x": np.ones((2, 3), np.float32), "y": np.ones(3, np.float32)})
    claim = PROVIDERS["coreml"].capability
    assert "1-D" in claim.graph_refusal(model.graph, {"": 17}, graph_values(model.graph))
