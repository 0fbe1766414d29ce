"""The verify stage: fidelity in the manifest, a build below tolerance fails with a report unless accepted."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from edgepack import build, load_profile, samples
from edgepack.samples.tiny import tiny_transformer
from edgepack.targets import Run
from edgepack.targets.generic import ONNXRUNTIME, onnxruntime_run
from edgepack.verify import compare, fidelity_summary, load_sample_inputs, measure, run_oracle


def strict_profile(folder: Path) -> Path:
    path = folder / "strict.toml"
    path.write_text('name = "strict"\ntarget = "openvino"\nproviders = ["openvino", "reference"]\n'
                    '[precision]\nweights = "fp16"\nactivations = "fp32"\n'
                    '[fidelity]\nmin_cosine = 1.0\nmax_abs_diff = 1e-12\n')
    return path


def test_below_tolerance_fails_with_a_report_and_keeps_no_bundle(cli, tmp_path: Path) -> None:
    result = cli("build", samples.path("tiny-cnn"), "--profile", strict_profile(tmp_path), "-o", tmp_path / "out")
    assert result.code == 2
    assert "does not reach the profile's fidelity" in result.message
    assert "probs: cosine" in result.message and "--accept-fidelity-loss" in result.message
    assert "Traceback" not in result.err
    assert not (tmp_path / "out" / "tiny-cnn-strict").exists()


def test_accept_fidelity_loss_keeps_the_bundle_and_says_so(cli, tmp_path: Path) -> None:
    result = cli("build", samples.path("tiny-cnn"), "--profile", strict_profile(tmp_path), "-o", tmp_path / "out",
                 "--accept-fidelity-loss")
    assert result.code == 0, result.err
    fidelity = json.loads((tmp_path / "out" / "tiny-cnn-strict" / "manifest.json").read_text())["fidelity"]
    assert fidelity["passed"] is False and fidelity["accepted_loss"] is True
    assert fidelity["failed_outputs"] == ["probs"]
    assert 0.999 < fidelity["outputs"]["probs"]["cosine"] < 1.0


def test_sample_inputs_folder_is_used(cli, tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.savez(folder / "a.npz", **samples.feeds("silero-vad"))
    result = cli("build", samples.path("silero-vad"), "--profile", "generic", "-o", tmp_path / "out",
                 "--sample-inputs", folder)
    assert result.code == 0, result.err
    fidelity = json.loads(next((tmp_path / "out").glob("*/manifest.json")).read_text())["fidelity"]
    assert fidelity["inputs"] == str(folder) and fidelity["samples"] == 1
    assert fidelity["outputs"]["output"]["max_abs_diff"] <= 1e-6


def test_generated_inputs_the_model_rejects_point_to_sample_inputs(cli, tmp_path: Path) -> None:
    result = cli("build", samples.path("silero-vad"), "--profile", "generic", "-o", tmp_path)
    assert result.code == 2
    assert "fails on sample input 0" in result.message and "--sample-inputs DIR" in result.message


def test_sample_inputs_must_match_the_inputs(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", wrong=np.zeros(2, np.float32))
    with pytest.raises(Exception, match=r"missing \['x'\], unknown \['wrong'\]"):
        load_sample_inputs(tmp_path, ["x"])


def test_compare_metrics() -> None:
    scores = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
    same = compare(scores, scores.copy())
    assert same == {"max_abs_diff": 0.0, "cosine": pytest.approx(1.0), "top1_agreement": 1.0,
                    "scale": pytest.approx(0.9)}
    flipped = compare(scores, scores[:, ::-1].copy())
    assert flipped["top1_agreement"] == 0.0 and flipped["max_abs_diff"] == pytest.approx(0.8)
    assert compare(scores, np.zeros((3, 2), np.float32))["cosine"] == 0.0


def test_a_generic_int8_bundle_is_verified_on_onnxruntime_too(tmp_path: Path) -> None:
    """The transformer in dynamic int8: onnxruntime runs MatMulInteger with this CPU's int8 instructions, the
    reference provider in exact integers; both are held to the profile's tolerance."""
    onnx.save(tiny_transformer(hidden=384, layers=2), tmp_path / "transformer.onnx")
    tokens = np.random.default_rng(0).standard_normal((1, 16, 384)).astype(np.float32)
    result = build(tmp_path / "transformer.onnx", "generic", tmp_path, weights="int8", activations="int8",
                   sample_inputs=[{"tokens": tokens}])
    fidelity = result.manifest["fidelity"]
    assert "MatMulInteger" in onnx_ops(result.bundle_dir / "model.onnx")
    runtime = fidelity["runtime"]
    assert runtime["name"] == f"onnxruntime {ort.__version__}" and runtime["failed_outputs"] == []
    for name, scores in runtime["outputs"].items():
        assert scores["cosine"] >= 0.99
        assert scores["cosine"] == pytest.approx(fidelity["outputs"][name]["cosine"], abs=1e-4)
    assert f"on onnxruntime {ort.__version__}" in fidelity_summary(fidelity)


def onnx_ops(path: Path) -> set[str]:
    return {node.op_type for node in onnx.load(path).graph.node}


def test_a_bundle_the_runtime_computes_differently_fails_verification(tmp_path: Path) -> None:
    """The runtime's outputs are held to the tolerance on their own: here onnxruntime runs tiny-cnn with its
    classifier's weight negated, as a runtime whose kernels go wrong would."""
    bundle = build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir
    source = onnx.load(samples.path("tiny-cnn"))
    wrong = onnx.ModelProto()
    wrong.CopyFrom(source)
    weight = next(t for t in wrong.graph.initializer if t.name == "fc.w_t")
    weight.CopyFrom(numpy_helper.from_array(-numpy_helper.to_array(weight), weight.name))

    def opener(_: Path) -> tuple[str, Callable[[], Run]]:
        return "onnxruntime", lambda: onnxruntime_run(wrong)

    profile = load_profile("generic")
    fidelity = measure(bundle, run_oracle(source), profile, replace(ONNXRUNTIME, open_bundle=opener))
    assert fidelity["outputs"]["probs"]["cosine"] >= profile.required_cosine
    assert fidelity["runtime"]["outputs"]["probs"]["cosine"] < profile.required_cosine
    assert fidelity["passed"] is False and fidelity["failed_outputs"] == ["probs on onnxruntime"]


def test_a_runtime_that_refuses_the_bundle_is_reported_not_failed(tmp_path: Path) -> None:
    bundle = build(samples.path("tiny-cnn"), "generic", tmp_path).bundle_dir

    def opener(_: Path) -> tuple[str, Callable[[], Run]]:
        return "onnxruntime", lambda: ort.InferenceSession(b"not a model", providers=["CPUExecutionProvider"])

    fidelity = measure(bundle, run_oracle(onnx.load(samples.path("tiny-cnn"))), load_profile("generic"),
                       replace(ONNXRUNTIME, open_bundle=opener))
    assert fidelity["passed"] is True
    assert fidelity["runtime"]["name"] == "onnxruntime" and "refused" in fidelity["runtime"]
    assert "onnxruntime refused the bundle" in fidelity_summary(fidelity)


def test_a_negligible_diff_passes_whatever_the_cosine() -> None:
    """A detector's map on a blank input is ~1e-7 everywhere: its cosine measures rounding noise. Relative to the
    output's scale (at least 1), a diff of 1e-5 or less passes; the same cosine on a unit-scale output fails."""
    from edgepack.verify import failed_outputs

    profile = load_profile("generic")
    tiny = {"max_abs_diff": 1.4e-7, "cosine": 0.998, "top1_agreement": None, "scale": 3e-7}
    visible = {"max_abs_diff": 2e-3, "cosine": 0.998, "top1_agreement": None, "scale": 1.0}
    large = {"max_abs_diff": 4e-3, "cosine": 0.99999, "top1_agreement": None, "scale": 900.0}
    assert failed_outputs({"map": tiny, "logits": visible, "boxes": large}, profile) == ["logits"]


def test_the_executors_disagreement_widens_the_tolerance() -> None:
    """Where reference and onnxruntime part on the fp32 source (rounding amplified by a dynamically quantized graph:
    cosine 0.9996 between them), a bundle is not held closer to either than they are to each other."""
    from edgepack.verify import failed_outputs

    profile = load_profile("generic")  # min cosine 0.9999
    scores = {"387": {"max_abs_diff": 0.33, "cosine": 0.99962, "top1_agreement": 1.0, "scale": 16.0}}
    assert failed_outputs(scores, profile) == ["387"]
    assert failed_outputs(scores, profile, {"387": 0.99961}) == []
    assert failed_outputs(scores, profile, {"387": 0.99999}) == ["387"]
