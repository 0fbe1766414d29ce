"""`edgepack build M --profile all`: every available profile in one run, and the portability report it writes
(report.json, and report.html opened in headless Chromium)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edgepack import build, samples
from edgepack.portability import build_all
from edgepack.portability_html import PEER_COLOUR, render_many
from edgepack.shared_work import SharedWork
from edgepack.targets.web.chromium import Chromium, missing
from tests.screenshot_colours import COUNT_COLOURS

ALL = ["android", "generic", "intel-nuc", "iphone", "raspberry-pi", "web"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    folder = tmp_path_factory.mktemp("all")
    code = __import__("edgepack.cli", fromlist=["main"]).main(
        ["build", str(samples.path("tiny-cnn")), "--profile", "all", "-o", str(folder), "--json"])
    assert code == 0
    return folder, json.loads((folder / "report.json").read_text())


def test_every_available_profile_is_built_and_reported(built: tuple[Path, dict]) -> None:
    folder, report = built
    assert [row["profile"] for row in report["profiles"]] == ALL
    assert report["score"] == 1.0 and all(row["passed"] for row in report["profiles"])
    for row in report["profiles"]:
        bundle = Path(row["bundle"])
        files = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
        assert row["bytes"]["bundle"] == files - (bundle / "manifest.json").stat().st_size or \
            row["bytes"]["bundle"] == files
        assert row["bytes"]["model"] + row["bytes"]["runtime"] == row["bytes"]["bundle"] and row["bytes"]["model"] > 0
        assert sum(p["node_share"] for p in row["placement"]) == pytest.approx(1, abs=1e-3)
        assert row["fidelity"]["cosine"] >= row["fidelity"]["tolerance"]["min_cosine"]


def test_latency_says_where_it_was_measured(built: tuple[Path, dict]) -> None:
    rows = {row["profile"]: row for row in built[1]["profiles"]}
    assert rows["generic"]["latency"]["p50_ms"] > 0 and "cpu provider" in rows["generic"]["latency"]["engine"]
    assert rows["intel-nuc"]["latency"]["engine"] == "this host, OpenVINO"
    assert rows["raspberry-pi"]["latency"]["emulated"] and rows["raspberry-pi"]["latency"]["p50_ms"] > 0
    assert rows["android"]["latency"]["emulated"] and rows["android"]["latency"]["p50_ms"] > 0
    assert rows["iphone"]["latency"]["p50_ms"] is None and "macOS" in rows["iphone"]["latency"]["not_timed"]
    emulation = rows["raspberry-pi"]["fidelity"]["emulation"]  # verified on the host build, qemu once beside it
    assert emulation["verified_on"] == ["cpu"] and emulation["passed"] is True
    if missing() is None:
        assert "Chromium" in rows["web"]["latency"]["engine"] and rows["web"]["latency"]["p50_ms"] > 0


def test_onnxruntime_on_the_source_model_is_timed_beside_the_bundles(built: tuple[Path, dict]) -> None:
    """The peer runs the source model on the inputs the bundles were timed on; each native row gets its ratio."""
    pytest.importorskip("onnxruntime")
    folder, report = built
    peer = report["peer"]
    assert "onnxruntime" in peer["engine"] and "1 thread" in peer["engine"] and peer["p50_ms"] > 0
    html = (folder / "report.html").read_text()
    generic = next(row for row in report["profiles"] if row["profile"] == "generic")["latency"]["p50_ms"]
    assert f"<td>{generic / peer['p50_ms']:.2f}x</td>" in html
    assert html.count("<td>emulated</td>") == 2  # raspberry-pi and android: no ratio to a native time


def test_a_page_of_several_models_keeps_every_plot_id_unique(built: tuple[Path, dict]) -> None:
    report = built[1]
    other = {**report, "model": "other/model.onnx"}
    html = render_many([report, other], {"jetson": "no such target here"})
    ids = [part.split('"', 1)[0] for part in html.split(' id="')[1:]]
    assert len(ids) == len(set(ids)) and "latency-plot-model-tiny-cnn-onnx" in ids
    assert html.count("<section ") == 2 and "jetson: no such target here" in html


def test_what_the_conversion_changed_is_listed(built: tuple[Path, dict]) -> None:
    rows = {row["profile"]: row for row in built[1]["profiles"]}
    assert any(item.startswith("precision: weights int8") for item in rows["raspberry-pi"]["lost"])
    assert not any(item.startswith("precision") for item in rows["generic"]["lost"])
    assert any("BatchNormalization" in item for item in rows["generic"]["lost"])  # folded into the Conv by slim


def test_the_generic_bundle_matches_onnxruntime_on_the_source(built: tuple[Path, dict]) -> None:
    """The report's fidelity is the build's own verify; onnxruntime judges the generic bundle independently."""
    ort = pytest.importorskip("onnxruntime")
    rows = {row["profile"]: row for row in built[1]["profiles"]}
    feeds = samples.feeds("tiny-cnn")
    source = ort.InferenceSession(str(samples.path("tiny-cnn")), providers=["CPUExecutionProvider"]).run(None, feeds)
    bundle = ort.InferenceSession(str(Path(rows["generic"]["bundle"]) / "model.onnx"),
                                  providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(bundle[0], source[0], rtol=1e-5, atol=1e-6)


def test_slim_and_oracle_work_is_shared_between_profiles(tmp_path: Path) -> None:
    """Two profiles that check the model to the same graph slim it once and run the source once."""
    shared = SharedWork()
    first = build(samples.path("tiny-cnn"), "web", tmp_path, shared=shared)
    second = build(samples.path("tiny-cnn"), "raspberry-pi", tmp_path, shared=shared)
    summaries = [{s.name: s.summary for s in result.report.stages} for result in (first, second)]
    assert not summaries[0]["slim"].endswith("(shared)") and summaries[1]["slim"].endswith("(shared)")
    assert summaries[1]["oracle"].endswith("(shared)")
    assert second.report.slim_nodes == first.report.slim_nodes


def test_timing_can_be_left_out(tmp_path: Path) -> None:
    report = build_all(samples.path("tiny-cnn"), ["generic"], tmp_path, latency=False)
    assert report.score == 1.0 and report.outcomes[0].latency is None


def test_a_failing_profile_lowers_the_score_and_says_why(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "dynamic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "length"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "length"])])
    model = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    report = build_all(model, ["generic", "raspberry-pi"], tmp_path / "dist", latency=False)
    assert report.score == 0.5
    failed = report.outcomes[1]
    assert not failed.built and "--dim length=SIZE" in failed.error
    saved = json.loads((tmp_path / "dist" / "report.json").read_text())
    assert saved["score"] == 0.5 and saved["profiles"][1]["error"] == failed.error


@pytest.mark.skipif(missing() is not None, reason=f"no headless Chromium: {missing()}")
def test_the_html_report_shows_the_table_and_plots_in_chromium(built: tuple[Path, dict]) -> None:
    folder, report = built
    with Chromium(folder) as browser:
        page = browser.page("report.html")
        page.set_viewport_size({"width": 1400, "height": 1000})
        rows = page.locator("#profiles tbody tr")
        assert rows.count() == len(ALL)
        assert rows.nth(4).locator("td").first.inner_text() == "raspberry-pi"
        assert page.locator("#score").inner_text() == "100%"
        for plot in ("latency-plot", "placement-plot", "bytes-plot"):
            box = page.locator(f"#{plot}").bounding_box()
            assert box and box["width"] > 300 and box["height"] > 100
            assert page.locator(f"#{plot} rect").count() >= len(ALL)
        shot = page.screenshot(full_page=True)
        assert not page.messages
        counts = page.evaluate(COUNT_COLOURS, [base64.b64encode(shot).decode(), list(BAR_COLOURS)])
    for (colour, what), count in zip(BAR_COLOURS.items(), counts):
        assert count > 500, f"{what} ({colour}): {count} pixels"


BAR_COLOURS = {"#2ca02c": "neon placement bar", "#6a3d9a": "openvino placement bar", "#e377c2": "coreml placement bar",
               "#1f77b4": "native latency bars", "#17becf": "model bytes bars", PEER_COLOUR: "onnxruntime's bar"}


def test_every_bundle_s_manifest_follows_the_documented_schema(built: tuple[Path, dict]) -> None:
    schema = json.loads((Path(__file__).parents[2] / "docs" / "manifest.schema.json").read_text())
    for row in built[1]["profiles"]:
        jsonschema.validate(json.loads((Path(row["bundle"]) / "manifest.json").read_text()), schema)
