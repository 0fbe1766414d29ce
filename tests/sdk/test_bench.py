"""`edgepack bench`: figures for edgepack and onnxruntime in one process, ratios from the medians, clear errors."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import edgepack
from edgepack import EdgepackError, samples
from edgepack.bench import bench
from tests.sdk.test_cli_errors import assert_user_error

FIGURES = ("load_ms", "first_run_ms", "p50_ms", "p90_ms", "p99_ms", "runs_per_s", "peak_rss_mb", "start_rss_mb")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return edgepack.build(samples.path("tiny-cnn"), "generic", tmp_path_factory.mktemp("bench")).bundle_dir


def test_compare_with_onnxruntime_json(cli) -> None:
    result = cli("bench", samples.path("tiny-cnn"), "--runs", "5", "--warmup", "1", "--json", "--compare",
                 "onnxruntime")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert set(report["engines"]) == {"edgepack", "onnxruntime"}
    ours, peer = report["engines"]["edgepack"], report["engines"]["onnxruntime"]
    assert ours["providers"] == ["cpu"] and peer["providers"] == ["CPUExecutionProvider"]  # never reference unasked
    for engine in (ours, peer):
        assert all(engine[k] > 0 for k in FIGURES), engine
        assert engine["p50_ms"] <= engine["p90_ms"] <= engine["p99_ms"]
        assert engine["runs_per_s"] == pytest.approx(1000 / engine["p50_ms"])
        assert engine["peak_rss_mb"] >= engine["start_rss_mb"] or report["rss_method"] == "ru_maxrss"
    assert report["ratios"]["p50"] == pytest.approx(ours["p50_ms"] / peer["p50_ms"])
    assert report["ratios"]["load"] == pytest.approx(ours["load_ms"] / peer["load_ms"])
    assert (report["runs"], report["warmup"], report["threads"]) == (5, 1, 1)
    assert report["inputs"] == [{"name": "image", "dtype": "float32", "shape": [1, 3, 32, 32], "from": "generated"}]
    assert report["peer_model"] == str(samples.path("tiny-cnn"))
    assert report["max_abs_diff"] < 1e-5  # same inputs, same model: the engines agree
    assert "noisy" in report["note"]


def test_table_and_note(cli) -> None:
    result = cli("bench", samples.path("tiny-cnn"), "--runs", "3", "--warmup", "0", "--compare", "onnxruntime")
    assert result.code == 0, result.err
    for fragment in ("edgepack", "onnxruntime", "load ms", "first run ms", "p50 ms", "p99 ms", "runs/s",
                     "peak RSS MB", "inputs: image float32[1, 3, 32, 32] (generated)", "noisy"):
        assert fragment in result.out, fragment
    rows = {line.split("│")[1].strip(): line for line in result.out.splitlines() if line.startswith("│")}
    assert "cpu" in rows["providers"] and "CPU" in rows["providers"]
    for ratio_row in ("load ms", "p50 ms"):
        assert re.search(r"│\s+x\d+\.\d\d\s+│$", rows[ratio_row]), rows[ratio_row]
    assert not re.search(r"x\d", rows["p90 ms"])


def test_reference_runs_only_when_asked(bundle: Path) -> None:
    assert bench(bundle, runs=1, warmup=0).engines[0].providers == ["cpu"]
    assert bench(bundle, "reference", runs=1, warmup=0).engines[0].providers == ["reference"]


def test_a_bundle_s_source_is_found_by_its_sha256(bundle: Path) -> None:
    report = bench(bundle, runs=1, warmup=0, compare="onnxruntime")
    assert report.peer_model is not None and Path(report.peer_model).name == "tiny-cnn.onnx"
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-5


def test_a_bundle_whose_source_is_nowhere_is_refused(cli, tmp_path: Path) -> None:
    import onnx

    model = onnx.load(samples.path("tiny-cnn"))
    model.doc_string = "a copy only this test has"
    source = tmp_path / "copy" / "gone.onnx"
    source.parent.mkdir()
    onnx.save(model, source)
    folder = edgepack.build(source, "generic", tmp_path / "dist", verify=False).bundle_dir
    source.unlink()
    assert_user_error(cli("bench", folder, "--compare", "onnxruntime", "--runs", "1"),
                      "the source model of", "(gone.onnx) was not found", "--source PATH")


def test_bundle_with_its_source(bundle: Path) -> None:
    report = bench(bundle, runs=2, warmup=0, compare="onnxruntime", source=samples.path("tiny-cnn"))
    assert [e.engine for e in report.engines] == ["edgepack", "onnxruntime"]
    assert report.peer_model == str(samples.path("tiny-cnn"))
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-5


def test_bundle_with_another_source_is_refused(bundle: Path) -> None:
    with pytest.raises(EdgepackError, match="is not the model this bundle was built from"):
        bench(bundle, runs=1, compare="onnxruntime", source=samples.path("tiny-transformer"))


def test_given_inputs_and_dims(cli, tmp_path: Path) -> None:
    np.save(tmp_path / "batch2.npy", samples.feeds("tiny-cnn")["image"].repeat(2, axis=0))
    given = json.loads(cli("bench", samples.path("tiny-cnn"), "--runs", "1", "--warmup", "0", "--json", "--input",
                           f"image={tmp_path / 'batch2.npy'}").out)
    assert given["inputs"] == [{"name": "image", "dtype": "float32", "shape": [2, 3, 32, 32], "from": "file"}]
    assert list(given["engines"]) == ["edgepack"] and given["ratios"] is None
    sized = json.loads(cli("bench", samples.path("tiny-cnn"), "--runs", "1", "--warmup", "0", "--json", "--dim",
                           "batch=3").out)
    assert sized["inputs"][0]["shape"] == [3, 3, 32, 32]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--runs", "0"], "bad counts: runs 0"),
    (["--threads", "0"], "threads 0"),
    (["--source", "x.onnx"], "--source is only used with --compare onnxruntime"),
    (["--input", "pixels=x.npy"], "x.npy' for 'pixels' does not exist"),
    (["--dim", "batch"], "bad --dim 'batch'"),
])
def test_user_errors(cli, args: list[str], fragment: str) -> None:
    assert_user_error(cli("bench", samples.path("tiny-cnn"), *args), fragment)


def test_unknown_input_name(cli, tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.zeros(1, np.float32))
    assert_user_error(cli("bench", samples.path("tiny-cnn"), "--input", f"pixels={tmp_path / 'x.npy'}"),
                      "'pixels', which is not an input of the model")


def test_onnxruntime_not_installed(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what `import onnxruntime` meets when it is missing
    assert_user_error(cli("bench", samples.path("tiny-cnn"), "--compare", "onnxruntime"),
                      "needs the onnxruntime package", "Pip install onnxruntime")
