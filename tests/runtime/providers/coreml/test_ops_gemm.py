"""Gemm: MIL `linear` with alpha and beta folded into constant weight and bias, else `matmul` with its transpose
flags and the scaling after it; against `reference`."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node, op_types

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 5)).astype(np.float32)
B = RNG.standard_normal((5, 4)).astype(np.float32)


def test_constant_weight_folds_alpha_beta_into_linear() -> None:
    c = RNG.standard_normal(4).astype(np.float32)
    model = one_node(helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transB=1),
                     {"a": A}, {"b": B.T.copy(), "c": c})
    [(op, args)] = mil_ops(model)
    assert op == "linear"
    np.testing.assert_allclose(args["weight"], 0.5 * B.T, rtol=1e-6)
    np.testing.assert_allclose(args["bias"], 2.0 * c, rtol=1e-6)
    assert coreml_error(model, {"a": A}) < FP32_TOLERANCE
    assert coreml_error(model, {"a": A}, "fp16") < FP16_TOLERANCE


def test_row_bias_of_full_shape_is_linear_bias() -> None:
    c = np.tile(RNG.standard_normal((1, 4)).astype(np.float32), (3, 1))
    model = one_node(helper.make_node("Gemm", ["a", "b", "c"], ["y"]), {"a": A}, {"b": B, "c": c})
    assert op_types(model) == ["linear"]
    assert coreml_error(model, {"a": A}) < FP32_TOLERANCE


def test_transposed_input_uses_matmul_flags() -> None:
    c = RNG.standard_normal((3, 4)).astype(np.float32)
    model = one_node(helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, alpha=1.5, beta=0.5),
                     {"a": A.T.copy()}, {"b": B, "c": c})
    ops = mil_ops(model)
    assert [op for op, _ in ops] == ["matmul", "mul", "add"]
    assert ops[0][1]["transpose_x"] is True and ops[0][1]["transpose_y"] is False
    assert coreml_error(model, {"a": A.T.copy()}) < FP32_TOLERANCE


@pytest.mark.parametrize("trans_b", [0, 1])
def test_two_inputs_and_input_bias(trans_b: int) -> None:
    b = B.T.copy() if trans_b else B
    c = RNG.standard_normal((1, 4)).astype(np.float32)
    feeds = {"a": A, "b": b, "c": c}
    model = one_node(helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=trans_b, beta=3.0), feeds)
    ops = mil_ops(model)
    assert [op for op, _ in ops] == ["matmul", "mul", "add"]
    assert ops[0][1]["transpose_y"] is bool(trans_b)
    assert coreml_error(model, feeds) < FP32_TOLERANCE
