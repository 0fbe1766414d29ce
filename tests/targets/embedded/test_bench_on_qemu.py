"""`edgepack bench BUNDLE --device qemu-arm64`: builds the bundle's example, runs it under qemu-aarch64, checks its
outputs against `reference`, says that emulated timings are not device speed, and prints the bench schema's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import edgepack
from edgepack import samples
from edgepack.bench_result import check_output

from .library_builds import LibraryBuilds


def test_bench_reports_correctness_and_emulated_timing_as_json(builds: LibraryBuilds, cli) -> None:
    result = cli("bench", builds.bundle("tiny-transformer"), "--device", "qemu-arm64", "--runs", "3", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    jsonschema.validate(report, json.loads((Path(__file__).parents[3] / "docs" / "bench.schema.json").read_text()))
    assert report["device"]["spec"] == "qemu-arm64" and report["device"]["arch"] == "aarch64"
    assert report["runs"] == 3 and report["emulated"] is True and report["device"]["emulated"] is True
    assert report["fidelity"]["passed"] is True
    outputs = report["fidelity"]["outputs"]
    assert [o["name"] for o in outputs] == builds.library("tiny-transformer").outputs
    assert all(o["max_abs_diff"] <= 1e-4 * o["scale"] for o in outputs)
    assert report["latency_ms"]["p50"] > 0
    assert "not the speed" in report["note"]
    assert report["inputs"][0]["from"] == "generated"


def test_bench_prints_a_verdict_and_the_emulation_warning(builds: LibraryBuilds, cli, tmp_path: Path) -> None:
    sr = tmp_path / "sr.npy"
    np.save(sr, samples.feeds("silero-vad")["sr"])
    result = cli("bench", builds.bundle("silero-vad"), "--device", "qemu-arm64", "--runs", "2", "--input",
                 f"sr={sr}")
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "correctness: PASS" in text
    assert "sr int64[] (file)" in text
    assert "on qemu-arm64 (emulated)" in text and "not the speed of an ARM64 device" in text


def test_bench_device_refuses_a_bundle_that_is_not_a_c_library(cli, tmp_path: Path) -> None:
    bundle = edgepack.build(samples.path("tiny-cnn"), profile="generic", output_dir=tmp_path).bundle_dir
    result = cli("bench", bundle, "--device", "qemu-arm64")
    assert result.code == 2
    assert "'generic' bundle, not a C library bundle" in result.message


def test_bench_device_refuses_a_provider(builds: LibraryBuilds, cli) -> None:
    result = cli("bench", builds.bundle("tiny-cnn"), "--device", "qemu-arm64", "--provider", "cpu")
    assert result.code == 2
    assert "--provider does not apply" in result.message


def test_bench_device_says_when_generated_inputs_do_not_fit_the_model(builds: LibraryBuilds, cli) -> None:
    result = cli("bench", builds.bundle("silero-vad"), "--device", "qemu-arm64")
    assert result.code == 2
    assert "Give real inputs with --input NAME=FILE.npy" in " ".join(result.message.split())


@pytest.mark.parametrize(("actual", "passed"), [(1.0 + 5e-5, True), (1.0 + 5e-4, False)])
def test_outputs_are_judged_relative_to_their_scale(actual: float, passed: bool) -> None:
    expected = np.array([1.0, -0.5], np.float32)
    check = check_output("y", expected, np.array([actual, -0.5], np.float32))
    assert check.passed is passed and check.scale == 1.0


def test_an_output_of_another_shape_fails() -> None:
    check = check_output("y", np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    assert check.passed is False and check.max_abs_diff == float("inf")
