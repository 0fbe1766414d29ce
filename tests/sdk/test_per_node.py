"""`build --per-node`: every value of the bundle beside the fp32 source's, and the first that drifts named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import edgepack
from edgepack import samples


def cancelling_model(path: Path) -> Path:
    """relu(x) -> + 1000 -> - 1000 -> * 2: in fp16 the subtraction loses x (fp16's step at 1000 is 0.5)."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Add", ["r", "big"], ["shifted"], name="shift"),
             helper.make_node("Sub", ["shifted", "big"], ["back"], name="unshift"),
             helper.make_node("Mul", ["back", "two"], ["y"], name="double")]
    graph = helper.make_graph(nodes, "cancel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                              [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("big", 1000.0),
                                                                                                ("two", 2.0))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_the_first_drifting_node_is_the_one_that_loses_precision(tmp_path: Path) -> None:
    pytest.importorskip("coremltools")
    model = cancelling_model(tmp_path / "cancel.onnx")
    result = edgepack.build(model, "iphone", tmp_path / "dist", accept_fidelity_loss=True, per_node=True)
    report = result.report.per_node
    assert not result.manifest["fidelity"]["passed"]
    assert report["first_drift"]["node"] == "unshift" and report["first_drift"]["provider"] == "coreml"
    assert report["compared"] >= 3
    rows = {row["node"]: row for row in report["worst"]}
    assert rows["shift"]["cosine"] > 0.9999 and not rows["shift"]["drifted"]


def test_a_bundle_without_drift_says_so(tmp_path: Path) -> None:
    result = edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path, per_node=True)
    report = result.report.per_node
    assert report["first_drift"] is None and report["compared"] >= 5
    assert all(row["cosine"] > 0.99999 for row in report["worst"])
