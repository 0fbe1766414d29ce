"""The verify stage: fidelity in the manifest, a build below tolerance fails with a report unless accepted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples
from edgepack.verify import compare, load_sample_inputs


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
    assert same == {"max_abs_diff": 0.0, "cosine": pytest.approx(1.0), "top1_agreement": 1.0}
    flipped = compare(scores, scores[:, ::-1].copy())
    assert flipped["top1_agreement"] == 0.0 and flipped["max_abs_diff"] == pytest.approx(0.8)
    assert compare(scores, np.zeros((3, 2), np.float32))["cosine"] == 0.0
