"""edgepack installed with no extras (no onnxruntime, OpenVINO, coremltools or Playwright) in a fresh venv: a
generic build of a real sample verifies and runs (on `reference` and on the C core built from the installed
sources), and test modules that need an extra skip naming it."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = ("onnxruntime", "openvino", "coremltools", "playwright")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv holding edgepack (no extras) and pytest."""
    folder = tmp_path_factory.mktemp("plain")
    venv.create(folder / "venv", with_pip=True)
    python = folder / "venv" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile", str(ROOT),
                    "pytest"], check=True, capture_output=True)
    return python


def run(python: Path, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_no_extra_is_installed(plain: Path) -> None:
    found = run(plain, "-c", f"import importlib.util; print([m for m in {EXTRAS!r} if importlib.util.find_spec(m)])")
    assert found.returncode == 0 and found.stdout.strip() == "[]", found.stdout + found.stderr


def test_a_generic_build_verifies_and_runs(plain: Path, tmp_path: Path) -> None:
    model = samples.path("ppocr-cls")
    built = run(plain, "-m", "edgepack", "build", model, "--profile", "generic", "-o", tmp_path, "--json")
    assert built.returncode == 0, built.stderr
    fidelity = json.loads(built.stdout)["fidelity"]
    assert fidelity["passed"] and "runtime" not in fidelity  # no onnxruntime: verified on reference only
    feeds = samples.feeds("ppocr-cls")
    np.save(tmp_path / "x.npy", feeds["x"])
    ran = run(plain, "-m", "edgepack", "run", tmp_path / f"{model.stem}-generic", "--input", f"x={tmp_path / 'x.npy'}",
              "-o", tmp_path / "out", "--json")
    assert ran.returncode == 0, ran.stderr
    probabilities = np.load(next((tmp_path / "out").glob("*.npy")))
    assert probabilities.shape == (1, 2) and np.isclose(probabilities.sum(), 1, atol=1e-5)
    # the C core built from the installed package's own sources (the thread pool's among them)
    on_cpu = run(plain, "-m", "edgepack", "run", tmp_path / f"{model.stem}-generic", "--input",
                 f"x={tmp_path / 'x.npy'}", "--provider", "cpu", "-o", tmp_path / "cpu")
    assert on_cpu.returncode == 0, on_cpu.stderr
    np.testing.assert_allclose(np.load(next((tmp_path / "cpu").glob("*.npy"))), probabilities, atol=1e-5)


def test_modules_that_need_an_extra_skip_naming_it(plain: Path) -> None:
    result = run(plain, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "tests/sdk/test_verify.py",
                 "tests/targets/test_openvino.py", "tests/test_layers.py")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "needs the [test] extra (onnxruntime is not installed: pip install 'edgepack[test]')" in result.stdout
    assert "5 passed, 2 skipped" in result.stdout, result.stdout[-2000:]
