"""Slice as MIL `slice_by_index` (ONNX's clamping and negative steps resolved at conversion) and Gather with
constant indices (negative ones made positive; a scalar index is a squeezing slice)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = np.random.default_rng(14).standard_normal((2, 3, 6, 5)).astype(np.float32)


def ints(*values: int) -> np.ndarray:
    return np.asarray(values, np.int64)


def slice_model(starts, ends, axes=None, steps=None):
    names, weights = ["x", "st", "en"], {"st": ints(*starts), "en": ints(*ends)}
    for name, values in (("ax", axes), ("sp", steps)):
        names.append(name if values is not None else "")
        if values is not None:
            weights[name] = ints(*values)
    while names[-1] == "":
        names.pop()
    return one_node(helper.make_node("Slice", names, ["y"]), {"x": X}, weights)


@pytest.mark.parametrize(("params", "begin", "end", "stride", "end_mask"), [
    (((1,), (-1,), (2,)), [0, 0, 1, 0], [2, 3, 5, 5], [1, 1, 1, 1], None),
    (((-1, 0), (-100, 1000), (3, 2), (-2, 2)), [0, 0, 0, 4], [2, 3, 6, 0], [1, 1, 2, -2], [False, False, False, True]),
    (((4,), (1,), (2,), (-1,)), [0, 0, 4, 0], [2, 3, 1, 5], [1, 1, -1, 1], None),
    (((0, 1), (2**63 - 1, 3)), [0, 1, 0, 0], [2, 3, 6, 5], [1, 1, 1, 1], None),
])
def test_slice_by_index(params, begin, end, stride, end_mask) -> None:
    model = slice_model(*params)
    [(op, args)] = mil_ops(model)
    assert op == "slice_by_index"
    assert args["begin"] == begin and args["end"] == end and args["stride"] == stride
    assert args.get("end_mask") == end_mask
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_slice_fp16() -> None:
    model = slice_model((1, -2), (3, 0), (1, 3), (1, -1))
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_slice_before_opset_10_reads_attributes() -> None:
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1], ends=[3], axes=[2])
    model = one_node(node, {"x": X}, opset=9)
    [(op, args)] = mil_ops(model)
    assert op == "slice_by_index" and args["begin"] == [0, 0, 1, 0] and args["end"] == [2, 3, 3, 5]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE


def test_gather_negative_indices() -> None:
    model = one_node(helper.make_node("Gather", ["x", "i"], ["y"], axis=2), {"x": X}, {"i": ints(-1, 0, 2)})
    assert mil_ops(model) == [("gather", {"indices": [5, 0, 2], "axis": 2, "batch_dims": 0})]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE


def test_gather_2d_indices() -> None:
    model = one_node(helper.make_node("Gather", ["x", "i"], ["y"], axis=0),
                     {"x": X[0, 0]}, {"i": np.asarray([[0, 1], [-1, 2]], np.int64)})
    [(op, args)] = mil_ops(model)
    assert op == "gather" and args["axis"] == 0
    assert coreml_error(model, {"x": X[0, 0]}) < FP32_TOLERANCE


def test_gather_scalar_index_drops_the_axis() -> None:
    model = one_node(helper.make_node("Gather", ["x", "i"], ["y"], axis=1), {"x": X}, {"i": np.int64(-1)})
    [(op, args)] = mil_ops(model)
    assert op == "slice_by_index"
    assert args["begin"] == [0, 2, 0, 0] and args["end"] == [2, 3, 6, 5]
    assert args["squeeze_mask"] == [False, True, False, False]
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
