"""Timing a bundle on this host: emulated runs stay within their budget, and the peer is onnxruntime on the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepack import build, samples
from edgepack.host_latency import host_latency, peer_latency
from edgepack.runtime.native.emulated import qemu


@pytest.fixture(scope="module")
def library_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    feeds = samples.feeds("tiny-cnn")
    return build(samples.path("tiny-cnn"), "raspberry-pi", tmp_path_factory.mktemp("latency"),
                 input_shapes={k: v.shape for k, v in feeds.items()}, verify=False).bundle_dir


@pytest.mark.skipif(qemu() is None, reason="qemu-aarch64 is not installed")
@pytest.mark.parametrize(("asked", "runs"), [(5000, 1), (5, 5)])
def test_emulated_runs_past_the_first_fit_the_budget(library_bundle: Path, asked: int, runs: int) -> None:
    """tiny-cnn runs in milliseconds under qemu: 5 runs fit the budget, 5000 do not (the first run alone is kept)."""
    latency = host_latency("embedded", library_bundle, samples.path("tiny-cnn"), samples.feeds("tiny-cnn"),
                           runs=asked)
    assert latency.emulated and latency.runs == runs and latency.p50_ms > 0 and "emulated" in latency.engine


@pytest.mark.skipif(qemu() is None, reason="qemu-aarch64 is not installed")
def test_an_emulated_run_over_the_budget_is_not_timed_and_says_where_to_time_it(
        library_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgepack.host_latency.EMULATED_BUDGET_S", 1e-3)
    latency = host_latency("embedded", library_bundle, samples.path("tiny-cnn"), samples.feeds("tiny-cnn"))
    assert latency.p50_ms is None and "took over 0.001 s under emulation (at qemu-arm64)" in latency.not_timed
    assert "--device ssh://" in latency.not_timed


def test_the_peer_is_onnxruntime_on_the_source_model_with_one_thread() -> None:
    pytest.importorskip("onnxruntime")
    latency = peer_latency(samples.path("tiny-cnn"), samples.feeds("tiny-cnn"), runs=3)
    assert latency.p50_ms > 0 and latency.runs == 3 and not latency.emulated
    assert "onnxruntime" in latency.engine and "1 thread" in latency.engine


def test_a_source_model_onnxruntime_refuses_is_not_timed_and_says_why(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    latency = peer_latency(broken, samples.feeds("tiny-cnn"))
    assert latency.p50_ms is None and "onnxruntime could not load broken.onnx" in latency.not_timed
