"""A short run of the coverage-guided fuzzers (fuzz/run_fuzzers.py at 1% of its 10^7 executions): the plan loader,
the loader and executor, and the bundle loaders, on the corpus kept in fuzz/corpus; no target may crash."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def missing() -> str | None:
    if not shutil.which("clang"):
        return "clang is not installed"
    runtime = subprocess.run(["clang", "-print-runtime-dir"], capture_output=True, text=True).stdout.strip()
    if not list(Path(runtime).glob("libclang_rt.fuzzer-*.a")):
        return "clang's libFuzzer runtime is not installed (apt-get install libclang-rt-dev)"
    if importlib.util.find_spec("atheris") is None:
        return "atheris is not installed (pip install atheris)"
    return None


@pytest.mark.skipif(missing() is not None, reason=str(missing()))
def test_a_short_fuzzing_run_finds_no_crash(tmp_path: Path) -> None:
    """...and leaves no folder of its own in the temporary folder (here the test's); the run target (EP_FUZZ_RUN)
    reaches the executor's code beyond the loader's."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "run_fuzzers.py"), "--scale", "0.01"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert list(scratch.glob("edgepack-*")) == []
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if "executions in" in line}
    assert set(lines) == {"epk-load", "epk-run", "manifest"}
    edges = {}
    for target, line in lines.items():
        executions = int(re.search(r"([\d,]+) executions", line).group(1).replace(",", ""))
        edges[target] = int(re.search(r"cov (\d+) edges", line).group(1))
        assert executions >= 2000 and edges[target] > 100 and line.endswith("crashes 0"), line
    assert edges["epk-run"] > edges["epk-load"] * 1.3, "the run target reached no more than the loader: no plan ran"
