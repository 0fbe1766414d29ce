"""Cast and CastLike (MIL `cast`), Identity and inference Dropout (MIL `identity`)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edgepack.runtime.capability import graph_values
from edgepack.runtime.providers import PROVIDERS

from .mil_cases import FP16_TOLERANCE, FP32_TOLERANCE, coreml_error, mil_ops, one_node

X = (np.random.default_rng(16).standard_normal((2, 3, 4)) * 3).astype(np.float32)


@pytest.mark.parametrize(("to", "dtype"), [(TensorProto.FLOAT16, "fp16"), (TensorProto.INT32, "int32"),
                                           (TensorProto.BOOL, "bool")])
def test_cast_from_float32(to: int, dtype: str) -> None:
    model = one_node(helper.make_node("Cast", ["x"], ["y"], to=to), {"x": X})
    assert mil_ops(model) == [("cast", {"dtype": dtype})]
    assert coreml_error(model, {"x": X}) == 0


def test_cast_from_int32_and_float16() -> None:
    ints = np.arange(-5, 7, dtype=np.int32).reshape(3, 4)
    model = one_node(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT), {"x": ints})
    assert mil_ops(model) == [("cast", {"dtype": "fp32"})]
    assert coreml_error(model, {"x": ints}) == 0
    half = X.astype(np.float16)
    model = one_node(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT), {"x": half})
    assert coreml_error(model, {"x": half}) < FP32_TOLERANCE


def test_castlike() -> None:
    model = one_node(helper.make_node("CastLike", ["x", "t"], ["y"]), {"x": X}, {"t": np.zeros(1, np.float16)})
    assert mil_ops(model) == [("cast", {"dtype": "fp16"})]
    assert coreml_error(model, {"x": X}) < FP16_TOLERANCE


@pytest.mark.parametrize("to", [TensorProto.INT64, TensorProto.DOUBLE, TensorProto.INT8])
def test_cast_to_types_coreml_has_not_is_refused(to: int) -> None:
    model = one_node(helper.make_node("Cast", ["x"], ["y"], to=to), {"x": X})
    node = model.graph.node[0]
    assert PROVIDERS["coreml"].capability.refusal(node, {"": 17}, graph_values(model.graph)) is not None


def test_identity_and_dropout() -> None:
    model = one_node(helper.make_node("Identity", ["x"], ["y"]), {"x": X})
    assert mil_ops(model) == [("identity", {})]
    assert coreml_error(model, {"x": X}, "fp16") < FP16_TOLERANCE
    model = one_node(helper.make_node("Dropout", ["x", "r"], ["y", "mask"]), {"x": X}, {"r": np.float32(0.3)})
    assert coreml_error(model, {"x": X}) < FP32_TOLERANCE
    training = one_node(helper.make_node("Dropout", ["x", "r", "t"], ["y"]), {"x": X},
                        {"r": np.float32(0.3), "t": np.bool_(False)})
    node = training.graph.node[0]
    assert PROVIDERS["coreml"].capability.refusal(node, {"": 17}, graph_values(training.graph)) is not None
