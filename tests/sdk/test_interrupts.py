"""Builds that end early: SIGINT and SIGTERM during the build's stages, two builds of one bundle at once, a disk that
fills, a folder a non-root user may not write. Each ends in exit 130 or a one-paragraph error, leaves no temporary
folder or lock behind, and leaves the older bundle as it was (or the new one whole)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgepack import samples
from edgepack.runtime.bundle_format import read_manifest

MODEL = "ppocr-cls"


def build_command(source: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "edgepack", "build", str(source), "-p", "generic", "-o", str(out), *extra]


def contents(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def older(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    """The source model, a folder holding an older bundle of it, and how long a whole build takes here (seconds)."""
    folder = tmp_path_factory.mktemp("older")
    source = folder / "model.onnx"
    shutil.copy(samples.path(MODEL), source)
    out = folder / "dist"
    start = time.perf_counter()
    subprocess.run(build_command(source, out), check=True, capture_output=True)
    return source, out, time.perf_counter() - start


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name != "model-generic")


SIGNALS_AT = [(0.2, signal.SIGINT), (0.6, signal.SIGTERM), (0.75, signal.SIGINT), (0.9, signal.SIGTERM)]
"""A share of a whole build's time and the signal sent then."""


@pytest.mark.parametrize(("share", "signum"), SIGNALS_AT, ids=[f"{s}-{signal.Signals(n).name}" for s, n in SIGNALS_AT])
def test_a_signal_during_the_build_leaves_the_older_bundle(older: tuple[Path, Path, float], tmp_path: Path,
                                                           share: float, signum: int) -> None:
    """The signal comes at a share of a whole build's time, so that it falls in different stages (imports, load and
    slim, the oracle, packaging and verify) on a fast machine or a slow one; each signal in two of them."""
    source, template, whole_s = older
    out = tmp_path / "dist"
    shutil.copytree(template, out)
    before = contents(out)
    proc = subprocess.Popen(build_command(source, out, "--force"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(share * whole_s)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert "Traceback" not in err and leftovers(out) == []
    assert proc.returncode in (130, 0, -signum), err  # -signum: after the command, as the interpreter ended
    if proc.returncode == 130:
        assert "interrupted" in err
    if contents(out) != before:  # the build got to its end first: the new bundle is whole
        assert read_manifest(out / "model-generic")


def test_two_builds_of_one_bundle_at_once(older: tuple[Path, Path, float], tmp_path: Path) -> None:
    source, template, _ = older
    out = tmp_path / "dist"
    shutil.copytree(template, out)
    procs = [subprocess.Popen(build_command(source, out, "--force"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    results = [(proc.wait(timeout=300), proc.stderr.read()) for proc in procs]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 0], [0, 2]), results
    for code, err in results:
        if code == 2:
            assert "another edgepack build is writing" in " ".join(err.split())
    assert read_manifest(out / "model-generic") and leftovers(out) == []


@pytest.fixture
def small_disk() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="edgepack-full-disk-"))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)
    folder.rmdir()


def test_a_disk_that_fills_during_the_build(older: tuple[Path, Path, float], small_disk: Path) -> None:
    source = older[0]
    proc = subprocess.run(build_command(source, small_disk, "--no-verify"), capture_output=True, text=True)
    message = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot write the bundle into '{small_disk}': No space left on device" in message
    assert list(small_disk.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to act as another user")
def test_a_folder_another_user_may_not_write(older: tuple[Path, Path, float]) -> None:
    home = Path(tempfile.mkdtemp(prefix="edgepack-nobody-"))
    try:
        home.chmod(0o755)
        source = home / "model.onnx"
        shutil.copy(older[0], source)
        source.chmod(0o644)
        locked = home / "dist"
        locked.mkdir(mode=0o755)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               *build_command(source, locked)], capture_output=True, text=True,
                              env={**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"cannot write the bundle into '{locked}': Permission denied" in " ".join(proc.stderr.split())
        assert list(locked.iterdir()) == []
    finally:
        shutil.rmtree(home)
