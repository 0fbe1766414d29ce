"""Every sample model runs on the `cpu` provider with outputs within 1e-4 of `reference` (max abs diff over the
output's scale), through the ctypes build and through the sanitized command-line runner."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples
from edgepack.runtime.native.build import runner
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, plan, reference_outputs, relative_error, slimmed


@pytest.mark.parametrize("name", samples.names())
def test_sample_matches_reference_on_cpu(name: str) -> None:
    outputs = PROVIDERS["cpu"].compile(slimmed(name), {}).run(feeds(name))
    expected = reference_outputs(name)
    assert sorted(outputs) == sorted(expected)
    for key, value in expected.items():
        assert outputs[key].shape == np.shape(value) and outputs[key].dtype == np.asarray(value).dtype
        assert relative_error(value, outputs[key]) <= TOLERANCE, key


def test_a_second_seed_reuses_the_plan_and_still_matches() -> None:
    partition = PROVIDERS["cpu"].compile(slimmed("tiny-transformer"), {})
    partition.run(feeds("tiny-transformer", 0))
    outputs = partition.run(feeds("tiny-transformer", 1))
    assert len(partition.sessions) == 1
    expected = reference_outputs("tiny-transformer", 1)
    assert relative_error(expected["encoded"], outputs["encoded"]) <= TOLERANCE


def run_cli(binary: Path, name: str, folder: Path) -> dict[str, np.ndarray]:
    plan_path = folder / f"{name}.epk"
    plan_path.write_bytes(plan(name))
    graph = slimmed(name).graph
    initializers = {t.name for t in graph.initializer}
    inputs = []
    for index, key in enumerate(i.name for i in graph.input if i.name not in initializers):
        inputs.append(folder / f"in{index}.npy")
        np.save(inputs[-1], feeds(name)[key])
    proc = subprocess.run([str(binary), str(plan_path), str(folder), *map(str, inputs)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr
    names = [o.name for o in slimmed(name).graph.output]
    return {key: np.load(folder / f"{i}.npy") for i, key in enumerate(names)}


@pytest.mark.parametrize("name", samples.names())
def test_sample_runs_clean_under_address_and_undefined_sanitizers(name: str, tmp_path: Path) -> None:
    outputs = run_cli(runner(sanitized=True), name, tmp_path)
    for key, value in reference_outputs(name).items():
        assert relative_error(value, outputs[key]) <= TOLERANCE, key
