"""Builds a C library bundle's example program and runs it (for aarch64: under qemu-aarch64) on `.npy` inputs."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.bundle_format import read_manifest
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import cache_root, cached

from .c_library import TOOLCHAIN

CROSS_COMPILER = "aarch64-linux-gnu-gcc"
EMULATOR = "qemu-aarch64"
INSTALL = "apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user make cmake"
OPTIMIZE = ["-O3", "-ffp-contract=fast", "-fno-math-errno", "-fno-trapping-math"]
"""The Makefile's default optimisation flags, kept when a build adds -march."""
LAUNCHER = "ccache"
"""Compiles through it where installed: a bundle's kernel files are the core's own, so examples of other bundles
(and rebuilds of one) reuse their objects."""
MAX_REPEAT = 1024
"""The example's limit for --repeat."""


@dataclass(frozen=True)
class Library:
    """What a bundle's manifest says about its C library."""

    folder: Path
    name: str
    plan: Path
    inputs: list[str]
    """Input names in the order the example takes them (the plan's)."""
    outputs: list[str]

    @property
    def binary_name(self) -> str:
        return f"{self.name}_example"


@dataclass(frozen=True)
class ExampleRun:
    outputs: dict[str, np.ndarray]
    median_ms: float | None
    """The example's median over its runs (with more than one run), in emulated milliseconds."""


def output_file(name: str) -> str:
    """The example's file name for output `name`: as the example writes it, each byte of the UTF-8 name other than
    an ASCII letter, digit, `.`, `_` or `-` becomes `_` (a non-ASCII character, of several bytes, several)."""
    return re.sub(rb"[^A-Za-z0-9._-]", b"_", name.encode()).decode() + ".npy"


def read_library(bundle: str | Path) -> Library:
    """The C library of an `embedded` bundle (manifest and sha256s checked); an error for any other folder."""
    folder = Path(bundle)
    manifest: dict[str, Any] = read_manifest(folder)
    library = next((p["library"] for p in manifest.get("partitions", []) if "library" in p), None)
    if manifest.get("target") != "embedded" or library is None:
        raise EdgepackError(f"{str(folder)!r} is a {manifest.get('target')!r} bundle, not a C library bundle",
                            where=str(folder), fix="build one with --profile raspberry-pi (target embedded)")
    return Library(folder, library["name"], folder / library["plan"], library["inputs"], library["outputs"])


def missing_tools(system: str = "make") -> list[str]:
    """The tools not installed here that cross-compiling with `system` and emulating need."""
    return [tool for tool in (CROSS_COMPILER, system, EMULATOR) if not shutil.which(tool)]


def compiler_launcher() -> str | None:
    """ccache where it is installed and its cache folder can be written (else it fails every compile), or None."""
    launcher = shutil.which(LAUNCHER)
    if launcher is None:
        return None
    config = subprocess.run([launcher, "--get-config", "cache_dir"], capture_output=True, text=True)
    if config.returncode != 0 or not config.stdout.strip():
        return None
    folder = Path(config.stdout.strip())
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return launcher if os.access(folder, os.W_OK) else None


def build_example(library: Library, build_dir: Path, system: str = "make", embed_plan: bool = False,
                  native: bool = False, march: str | None = None, threads: bool = False) -> Path:
    """Cross-compiles the library and its example for aarch64 into `build_dir` with the bundle's Makefile or with
    CMake and its toolchain file (with `embed_plan`, the plan linked in; with `threads`, the thread pool), or with
    `native`, builds them for this machine's architecture with its own compiler (`make CROSS=`), for the CPU `march`
    names where given (`native`, `x86-64-v3`); through ccache where installed; returns the example binary."""
    missing = [tool for tool in ("gcc", "make") if not shutil.which(tool)] if native else missing_tools(system)
    if missing:
        raise EdgepackError(f"building the C library needs {', '.join(missing)}, not installed here", fix=INSTALL)
    build_dir = build_dir.absolute()
    launcher = compiler_launcher()
    compiler = [f"CC={launcher} {'gcc' if native else CROSS_COMPILER}"] if launcher else []
    if native:
        tuned = [f"CFLAGS={' '.join([*OPTIMIZE, f'-march={march}'])}"] if march else []
        commands = [["make", "-C", str(library.folder), f"BUILD={build_dir}", "CROSS=", *compiler, *tuned,
                     f"THREADS={int(threads)}", "-j2"]]
    elif system == "make":
        commands = [["make", "-C", str(library.folder), f"BUILD={build_dir}", *compiler,
                     f"EMBED_PLAN={int(embed_plan)}", f"THREADS={int(threads)}", "-j2"]]
    elif system == "cmake":
        commands = [["cmake", "-S", str(library.folder), "-B", str(build_dir),
                     f"-DCMAKE_TOOLCHAIN_FILE={library.folder.absolute() / TOOLCHAIN}",
                     *([f"-DCMAKE_C_COMPILER_LAUNCHER={launcher}"] if launcher else []),
                     f"-DEMBED_PLAN={'ON' if embed_plan else 'OFF'}", f"-DTHREADS={'ON' if threads else 'OFF'}"],
                    ["cmake", "--build", str(build_dir), "-j2"]]
    else:
        raise ValueError(f"unknown build system {system!r}")
    for command in commands:
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise EdgepackError(f"building the C library failed: {(proc.stderr or proc.stdout).strip()[-2000:]}",
                                where=" ".join(command[:3]), fix="check the cross compiler, or report the error")
    return build_dir / library.binary_name


def cached_example(library: Library, native: bool = False, march: str | None = None, threads: bool = False) -> Path:
    """build_example's binary (with the Makefile), built once per bundle's files, flags and compiler into the core's
    cache: benchmarking one bundle again and again compiles it once."""
    digest = hashlib.sha256()
    for path in sorted(p for p in library.folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(library.folder).as_posix().encode() + b"\0" + path.read_bytes())
    compiler = shutil.which("gcc" if native else CROSS_COMPILER)
    digest.update(repr((native, march, threads, compiler)).encode())
    target = cache_root() / f"example-{library.binary_name}-{digest.hexdigest()[:16]}"

    def make(temporary: Path) -> None:
        binary = build_example(library, temporary.parent / "build", native=native, march=march, threads=threads)
        shutil.copy(binary, temporary)

    return cached(target, make)


def run_example(library: Library, binary: Path, feeds: dict[str, np.ndarray], repeat: int = 1,
                embedded_plan: bool = False, threads: int = 1) -> ExampleRun:
    """Runs the example under qemu-aarch64 on `feeds` (by input name), `repeat` times (on `threads` threads), on the
    bundle's plan file or (`embedded_plan`) on the plan linked into it; reads its outputs."""
    if not 1 <= repeat <= MAX_REPEAT:
        raise EdgepackError(f"the example runs 1 to {MAX_REPEAT} times, not {repeat}", fix="choose --runs in range")
    with tempfile.TemporaryDirectory(prefix="edgepack-example-") as tmp:
        folder = Path(tmp)
        paths = []
        for index, name in enumerate(library.inputs):
            paths.append(folder / f"in{index}.npy")
            np.save(paths[-1], np.asarray(feeds[name]))
        command = [EMULATOR, str(binary), "--embedded" if embedded_plan else str(library.plan), str(folder),
                   *(["--repeat", str(repeat)] if repeat > 1 else []),
                   *(["--threads", str(threads)] if threads > 1 else []), *map(str, paths)]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise EdgepackError(f"the example failed under {EMULATOR}: {proc.stderr.strip()[:1000]}",
                                where=binary.name, fix="check the inputs against the bundle's header")
        median = re.search(r"median_ms ([0-9.]+)", proc.stdout)
        outputs = {name: np.load(folder / output_file(name)) for name in library.outputs}
    return ExampleRun(outputs, float(median.group(1)) if median else None)
