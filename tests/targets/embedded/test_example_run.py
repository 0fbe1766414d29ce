"""`cached_example`: the example binary `edgepack bench` runs is built once per bundle's files and flags; and
`build_example` compiles through ccache where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from edgepack.targets.embedded.example_run import (
    build_example,
    cached_example,
    compiler_launcher,
    read_library,
    run_example,
)

from .library_builds import TOLERANCE, LibraryBuilds, relative_error


def test_a_bundle_benchmarked_again_reuses_its_example_binary(builds: LibraryBuilds, tmp_path: Path) -> None:
    """The binary is keyed on the bundle's files, not its folder: a copy of the bundle finds the binary the first
    build made (not rebuilt), which matches reference; other flags (the thread pool) make another binary."""
    library = builds.library("tiny-cnn")
    first = cached_example(library)
    built_at = first.stat().st_mtime_ns
    copy = read_library(shutil.copytree(library.folder, tmp_path / "copy"))
    again = cached_example(copy)
    assert again == first and again.stat().st_mtime_ns == built_at
    outputs = run_example(copy, again, builds.feeds("tiny-cnn")).outputs
    for key, value in builds.reference("tiny-cnn").items():
        assert relative_error(value, outputs[key]) <= TOLERANCE, key
    assert cached_example(copy, threads=True) != first


def ccache_counts() -> dict[str, int]:
    lines = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True).stdout
    return {key: int(value) for key, value in (line.split("\t") for line in lines.splitlines())}


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")
def test_a_second_folder_of_one_bundle_compiles_from_ccache(builds: LibraryBuilds, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """In an empty cache the first build misses on every source it compiles; a build of a copy of the bundle (another
    folder, another build folder) hits on every one of them, and its binary is the first's, byte for byte."""
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    library = builds.library("tiny-cnn")
    first = build_example(library, tmp_path / "first")
    sources = len(list((tmp_path / "first").rglob("*.o")))
    cold = ccache_counts()
    assert cold["direct_cache_miss"] == sources and cold["direct_cache_hit"] == 0
    copy = read_library(shutil.copytree(library.folder, tmp_path / "copy"))
    again = build_example(copy, tmp_path / "again")
    warm = ccache_counts()
    assert warm["direct_cache_hit"] == sources and warm["direct_cache_miss"] == sources
    assert again.read_bytes() == first.read_bytes()


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed")
def test_ccache_is_left_out_where_its_cache_folder_cannot_be_made(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """ccache fails every compile when it cannot make its folder: then the build runs the compiler alone."""
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "usable"))
    assert compiler_launcher() == shutil.which("ccache") and (tmp_path / "usable").is_dir()
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "a-file" / "cache"))
    assert compiler_launcher() is None
