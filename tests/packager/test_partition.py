"""The partitioner: providers in priority order, acyclic partitions that compute what the model computes, and
fallback for what the accelerator refuses to compile."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.partition import Partition, partition
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.providers import PROVIDERS


def slimmed(name: str) -> onnx.ModelProto:
    model, _ = slim(check_model(load_model(samples.path(name)).model, name))
    return model


def run_plan(parts: list[Partition], feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each partition in order on its provider, reading only values produced before it (so the plan is acyclic)."""
    values = dict(feeds)
    for part in parts:
        compiled = PROVIDERS[part.provider].compile(part.model, {})
        values.update(compiled.run({name: values[name] for name in part.inputs}))
    return values


@pytest.mark.parametrize("name", ["ppocr-cls", "tiny-transformer", "silero-vad-16k-op15", "silero-vad"])
def test_plan_computes_what_the_model_computes(name: str) -> None:
    model = slimmed(name)
    parts = partition(model, ["openvino", "reference"], "reference")
    feeds = samples.feeds(name)
    expected = PROVIDERS["reference"].compile(model, {}).run(feeds)
    actual = run_plan(parts, feeds)
    for key, value in expected.items():
        np.testing.assert_allclose(actual[key], value, rtol=0, atol=1e-4, err_msg=key)
    assert sum(p.nodes for p in parts) == len(model.graph.node)


def test_cnn_is_wholly_on_the_accelerator() -> None:
    parts = partition(slimmed("ppocr-cls"), ["openvino", "reference"], "reference")
    assert [p.provider for p in parts] == ["openvino"]


def test_subgraph_openvino_refuses_to_compile_falls_back() -> None:
    """OpenVINO claims silero's If (its body ops are claimed) but refuses to compile it: dynamic rank."""
    parts = partition(slimmed("silero-vad-16k-op15"), ["openvino", "reference"], "reference")
    fallback = [p for p in parts if p.provider == "reference"]
    assert fallback and all(p.ops == ["If"] for p in fallback)
    assert sum(p.nodes for p in parts if p.provider == "openvino") > 30


def test_a_refused_piece_is_split_down_to_the_refused_node() -> None:
    model = slimmed("tiny-cnn")
    refused_op = "MaxPool"

    def compiles(provider: str, piece: onnx.ModelProto) -> bool:
        return all(node.op_type != refused_op for node in piece.graph.node)

    parts = partition(model, ["openvino", "reference"], "reference", compiles=compiles)
    assert [p.ops for p in parts if p.provider == "reference"] == [[refused_op]]
    assert len([p for p in parts if p.provider == "openvino"]) == 2
    expected = PROVIDERS["reference"].compile(model, {}).run(samples.feeds("tiny-cnn"))
    actual = run_plan(parts, samples.feeds("tiny-cnn"))
    np.testing.assert_allclose(actual["probs"], expected["probs"], rtol=0, atol=1e-5)


def test_unclaimed_nodes_go_to_the_fallback() -> None:
    model = slimmed("tiny-cnn")
    parts = partition(model, ["reference"], "reference")
    assert [(p.provider, p.nodes) for p in parts] == [("reference", len(model.graph.node))]
