"""`edgepack inspect`: a model's structure counted from the file, a bundle's manifest."""

from __future__ import annotations

import json
from collections import Counter

import onnx
from onnx import numpy_helper

from edgepack import samples
from edgepack.runtime.graph_protos import iter_graph_protos


def test_inspect_model_counts_subgraph_nodes_and_control_flow(cli) -> None:
    path = samples.path("silero-vad")
    result = cli("inspect", path, "--json")
    assert result.code == 0
    info = json.loads(result.out)
    model = onnx.load(path)
    nodes = [n for g in iter_graph_protos(model.graph) for n in g.node]
    assert info["nodes"] == len(nodes) > len(model.graph.node)
    assert info["ops"] == dict(Counter(n.op_type for n in nodes))
    assert info["control_flow"] == {"If": sum(n.op_type == "If" for n in nodes)}
    assert info["opsets"] == {"ai.onnx": 16}
    assert [i["name"] for i in info["inputs"]] == ["input", "state", "sr"]
    assert info["inputs"][2] == {"name": "sr", "dtype": "int64", "shape": []}


def test_inspect_model_counts_parameters_in_constant_nodes(cli) -> None:
    path = samples.path("ppocr-cls")
    info = json.loads(cli("inspect", path, "--json").out)
    model = onnx.load(path)
    tensors = [a.t for n in model.graph.node if n.op_type == "Constant" for a in n.attribute]
    tensors += list(model.graph.initializer)
    arrays = [numpy_helper.to_array(t) for t in tensors]
    assert info["parameters"] == sum(a.size for a in arrays) > 100_000
    assert info["parameter_bytes"] == sum(a.nbytes for a in arrays)
    assert info["inputs"][0]["shape"] == [None, 3, "?", "?"]  # -1 is unknown; "?" is the name paddle2onnx wrote
    assert info["custom_domains"] == []


def test_inspect_table_output_names_the_symbolic_dims(cli) -> None:
    result = cli("inspect", samples.path("silero-vad-half"))
    assert result.code == 0
    assert "[batch, sequence]" in result.out and "[2, batch, 128]" in result.out
    assert "If x" in result.out


def test_inspect_bundle_shows_partitions_and_artifacts(cli, tmp_path) -> None:
    assert cli("build", samples.path("tiny-if"), "-p", "generic", "-o", tmp_path).code == 0
    bundle = tmp_path / "tiny-if-generic"
    info = json.loads(cli("inspect", bundle, "--json").out)
    manifest = info["manifest"]
    assert info["kind"] == "bundle"
    assert manifest["partitions"][0]["artifact"] == "model.onnx"
    assert manifest["artifacts"]["model.onnx"]["bytes"] == (bundle / "model.onnx").stat().st_size
    text = cli("inspect", bundle).out
    assert "partitions" in text and "model.onnx" in text and "tiny-if.onnx" in text
