"""`cached_example`: the example binary `edgepack bench` runs is built once per bundle's files and flags."""

from __future__ import annotations

import shutil
from pathlib import Path

from edgepack.targets.embedded.example_run import cached_example, read_library, run_example

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
