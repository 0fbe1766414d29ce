"""Verifying a bundle whose plans run under emulation here (`neon` under qemu-aarch64): the shipped plan is verified
on the host build of the core on every sample, and run once under emulation beside it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgepack import build, samples
from edgepack.runtime import Session
from edgepack.runtime.providers import PROVIDERS

pytestmark = pytest.mark.skipif(PROVIDERS["neon"].missing() is not None, reason=f"{PROVIDERS['neon'].missing()}")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pi")
    return build(samples.path("tiny-transformer"), "raspberry-pi", folder, dims={"seq": 16}).bundle_dir


def test_the_shipped_plan_runs_on_its_host_stand_in_as_under_emulation(bundle: Path) -> None:
    """The stand-in loads the same .epk file (no second lowering) and gives the emulated build's outputs."""
    feeds = samples.feeds("tiny-transformer")
    host = Session(bundle, stand_ins=True)
    emulated = Session(bundle)
    assert host.stood_in == ["p0"] and [p.provider for p in host.partitions] == ["cpu"]
    assert [p.provider for p in emulated.partitions] == ["neon"]
    for name, value in emulated.run(feeds).items():
        np.testing.assert_allclose(host.run(feeds)[name], value, rtol=1e-5, atol=1e-5)


def test_the_manifest_says_where_the_bundle_was_verified(bundle: Path) -> None:
    emulation = json.loads((bundle / "manifest.json").read_text())["fidelity"]["emulation"]
    assert emulation["verified_on"] == ["cpu"] and emulation["emulated"] == ["neon"]
    assert emulation["passed"] is True and emulation["relative_max_abs_diff"] <= 1e-4


def test_a_slow_emulated_run_is_stopped_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgepack.verify.SMOKE_SECONDS", 0.001)
    result = build(samples.path("tiny-transformer"), "raspberry-pi", tmp_path, dims={"seq": 16})
    emulation = result.manifest["fidelity"]["emulation"]
    assert emulation["passed"] is None and emulation["not_run"] == "stopped after 0.001 s under emulation"
    assert result.manifest["fidelity"]["passed"]
