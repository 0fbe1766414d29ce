"""The slim pipeline: passes in order, subgraphs slimmed too, a failing pass skipped with the model kept."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from edgepack import samples
from edgepack.packager import slim as slim_module
from edgepack.packager.graphs import count_nodes
from edgepack.packager.passes import PASSES, SlimPass
from edgepack.runtime.graph_protos import iter_graph_protos
from edgepack.samples.tiny import tiny_if
from tests.oracle import run_onnxruntime


def test_every_pipeline_pass_is_registered() -> None:
    for name in (*slim_module.LIBRARY_PIPELINE, *slim_module.OWN_PIPELINE):
        assert name in PASSES, name


def test_if_bodies_are_slimmed() -> None:
    model = tiny_if()
    slimmed, records = slim_module.slim(model)
    branches = [g for g in iter_graph_protos(slimmed.graph)][1:]
    assert len(branches) == 2
    for branch in branches:
        ops = [n.op_type for n in branch.node]
        assert "Identity" not in ops and "Constant" not in ops
    else_ops = [n.op_type for n in branches[1].node]
    assert else_ops.count("Mul") <= 1, "the duplicate Mul in the else branch is one subexpression"
    for flag in (True, False):
        feeds = {"x": np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8), "use_relu": np.array(flag)}
        np.testing.assert_allclose(run_onnxruntime(slimmed, feeds)["y"], run_onnxruntime(model, feeds)["y"],
                                   atol=1e-6)
    assert count_nodes(slimmed) < count_nodes(model)
    assert [r.name for r in records][:2] == ["onnxscript-optimizer", "onnxslim"]


def test_a_failing_pass_is_skipped_and_the_model_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(model):
        model.graph.remove(next(iter(model.graph)), safe=False)
        raise RuntimeError("pattern matcher exploded")

    monkeypatch.setitem(PASSES, "onnxslim", SlimPass("onnxslim", "broken for this test", broken))
    model = onnx.load(samples.path("tiny-cnn"))
    slimmed, records = slim_module.slim(model)
    record = next(r for r in records if r.name == "onnxslim")
    assert record.status == "skipped" and "pattern matcher exploded" in record.note
    assert record.removed == 0 and record.runs == 1
    feeds = samples.feeds("tiny-cnn")
    np.testing.assert_allclose(run_onnxruntime(slimmed, feeds)["probs"], run_onnxruntime(model, feeds)["probs"],
                               atol=1e-6)


def test_the_same_model_slimmed_again_is_taken_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slimming is deterministic: a second build of the same source (another profile or precision) reuses it, as a
    fresh copy, with no pass run again; a replaced pass is another pipeline and runs."""
    monkeypatch.setattr(slim_module, "SLIMMED", type(slim_module.SLIMMED)())
    runs: list[str] = []
    original = PASSES["cse"]

    def counted_cse(label: str) -> SlimPass:
        return SlimPass("cse", original.summary, lambda model: runs.append(label) or original.apply(model))

    monkeypatch.setitem(PASSES, "cse", counted_cse("cse"))
    model = onnx.load(samples.path("tiny-cnn"))
    first, first_records = slim_module.slim(model)
    counted = len(runs)
    second, second_records = slim_module.slim(model)
    assert len(runs) == counted > 0
    assert second.SerializeToString() == first.SerializeToString() and second is not first
    assert [(r.name, r.removed, r.runs) for r in second_records] == [(r.name, r.removed, r.runs) for r in first_records]
    assert all(r.seconds == 0.0 for r in second_records)
    second.graph.ClearField("node")
    assert slim_module.slim(model)[0].SerializeToString() == first.SerializeToString()
    monkeypatch.setitem(PASSES, "cse", counted_cse("new"))
    slim_module.slim(model)
    assert "new" in runs
