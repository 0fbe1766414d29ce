"""The oracle checked by onnxruntime: where the reference provider fails on the source or disagrees with onnxruntime,
onnxruntime's outputs become the oracle and the first node where the two part is named."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference.op_run import OpRun

from edgepack.runtime.providers import reference
from edgepack.verify import REFERENCE, run_oracle

pytest.importorskip("onnxruntime")


def relu_neg_model() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Neg", ["r"], ["n"], name="neg"),
             helper.make_node("Abs", ["n"], ["y"], name="abs")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def off_by_one(x: np.ndarray) -> tuple[np.ndarray]:
    return (-x + 1,)


def test_when_both_agree_the_reference_provider_is_the_oracle() -> None:
    oracle = run_oracle(relu_neg_model())
    assert oracle.name == REFERENCE and len(oracle.expected) == 2


def test_a_disagreement_names_the_first_node_and_onnxruntime_becomes_the_oracle(
        monkeypatch: pytest.MonkeyPatch) -> None:
    wrong_neg = type("Neg", (OpRun,), {"op_domain": "", "_run": lambda self, x: off_by_one(x)})
    monkeypatch.setattr(reference, "FIXES", [*reference.FIXES, wrong_neg])
    oracle = run_oracle(relu_neg_model())
    assert oracle.name.startswith("onnxruntime on the fp32 source (the reference provider disagrees on output 'y'")
    assert "first at node 'neg' (Neg)" in oracle.name
    assert oracle.floor["y"] < 0.99  # how far the two executors part: the tolerance widens by it
    for feeds, expected in zip(oracle.samples, oracle.expected):
        np.testing.assert_allclose(expected["y"], np.abs(-np.maximum(feeds["x"], 0)))


def test_a_failing_reference_provider_is_replaced_by_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: OpRun, x: np.ndarray) -> tuple[np.ndarray]:
        raise ValueError("axis 2 is out of bounds")

    monkeypatch.setattr(reference, "FIXES", [*reference.FIXES, type("Neg", (OpRun,), {"op_domain": "",
                                                                                      "_run": refuse})])
    oracle = run_oracle(relu_neg_model())
    assert "the reference provider fails on it" in oracle.name and "axis 2 is out of bounds" in oracle.name
    assert oracle.expected[0]["y"].shape == (2, 3)
