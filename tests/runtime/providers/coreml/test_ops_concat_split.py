"""Concat (constant operands in the float type of the others) and Split (sizes from the attribute, the constant
input or num_outputs)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

RNG = np.random.default_rng(13)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
Y = RNG.standard_normal((2, 2, 4)).astype(np.float32)


def test_concat_with_a_constant() -> None:
    model = one_node(helper.make_node("Concat", ["x", "c", "y"], ["z"], axis=-2), {"x": X, "y": Y}, {"c": Y + 1})
    assert mil_ops(model) == [("concat", {"axis": 1, "interleave": False})]
    assert coreml_error(model, {"x": X, "y": Y}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X, "y": Y}, "fp16") < FP16_TOLERANCE


@pytest.mark.parametrize(("opset", "sizes", "expected"), [(13, (1, 3), [1, 3]), (11, (3, 1), [3, 1]),
                                                          (13, None, [2, 2])])
def test_split_sizes(opset: int, sizes, expected) -> None:
    if sizes is not None and opset >= 13:
        model = one_node(helper.make_node("Split", ["x", "s"], ["a", "b"], axis=2), {"x": X},
                         {"s": np.asarray(sizes, np.int64)}, opset)
    else:
        extra = {"split": list(sizes)} if sizes else {}
        model = one_node(helper.make_node("Split", ["x"], ["a", "b"], axis=2, **extra), {"x": X}, opset=opset)
    ops = mil_ops(model)
    assert ops[0] == ("split", {"axis": 2, "split_sizes": expected})
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_split_num_outputs_uneven() -> None:
    """Opset 18: num_outputs chunks of ceil(n / count), the last one smaller."""
    data = RNG.standard_normal((2, 7)).astype(np.float32)
    model = one_node(helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3), {"x": data}, opset=18)
    assert mil_ops(model)[0] == ("split", {"axis": 1, "split_sizes": [3, 3, 1]})
    assert coreml_error(model, {"x": data}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": data}, "fp16") < FP16_TOLERANCE
