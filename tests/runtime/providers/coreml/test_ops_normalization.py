"""BatchNormalization, InstanceNormalization and LayerNormalization as MIL `batch_norm`, `instance_norm` and
`layer_norm` (BatchNormalization of rank 2 as mul and add); against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node, op_types

RNG = np.random.default_rng(17)


def stats(channels: int) -> dict[str, np.ndarray]:
    return {"s": RNG.standard_normal(channels).astype(np.float32),
            "b": RNG.standard_normal(channels).astype(np.float32),
            "m": RNG.standard_normal(channels).astype(np.float32),
            "v": (RNG.random(channels) + 0.5).astype(np.float32)}


@pytest.mark.parametrize(("shape", "ops"), [((2, 3, 4, 5), ["batch_norm"]), ((2, 3, 5), ["batch_norm"]),
                                            ((4, 3), ["mul", "add"])])
def test_batch_norm(shape, ops) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3, momentum=0.9)
    model = one_node(node, {"x": x}, stats(3), opset=12)
    assert op_types(model) == ops
    if ops == ["batch_norm"]:
        assert mil_ops(model)[0][1]["epsilon"] == pytest.approx(1e-3)
    assert coreml_error(model, {"x": x}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": x}, "fp16") < FP16_TOLERANCE


def test_instance_norm() -> None:
    x = RNG.standard_normal((2, 3, 6, 5)).astype(np.float32)
    weights = {k: v for k, v in stats(3).items() if k in "sb"}
    model = one_node(helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-4), {"x": x},
                     weights)
    [(op, args)] = mil_ops(model)
    assert op == "instance_norm" and args["epsilon"] == pytest.approx(1e-4)
    assert coreml_error(model, {"x": x}) < FP32_TOLERANCE


@pytest.mark.parametrize(("axis", "bias"), [(-1, True), (1, False)])
def test_layer_norm(axis: int, bias: bool) -> None:
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    normalized = x.shape[axis % 3:]
    weights = {"s": RNG.standard_normal(normalized).astype(np.float32)}
    if bias:
        weights["b"] = RNG.standard_normal(normalized[-1:]).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "s", "b" if bias else ""], ["y"], axis=axis, epsilon=1e-5)
    model = one_node(node, {"x": x}, weights)
    [(op, args)] = mil_ops(model)
    assert op == "layer_norm" and args["axes"] == list(range(axis % 3, 3))
    assert coreml_error(model, {"x": x}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": x}, "fp16") < FP16_TOLERANCE
