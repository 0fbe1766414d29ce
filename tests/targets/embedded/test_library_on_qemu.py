"""Every sample model built with `--profile raspberry-pi`: its C library, cross-compiled for aarch64 with the bundle's
Makefile (and once with CMake and the toolchain file), runs under qemu-aarch64 and matches `reference` on the
bundle's graph within 1e-4 (max abs diff over max(1, max |reference output|))."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples
from edgepack.runtime.errors import EdgepackError
from edgepack.targets.embedded.example_run import build_example, run_example

from .library_builds import TOLERANCE, LibraryBuilds, relative_error


@pytest.mark.slow
@pytest.mark.parametrize("name", samples.names())
def test_sample_library_matches_reference_under_qemu(builds: LibraryBuilds, name: str) -> None:
    expected = builds.reference(name)
    actual = builds.outputs(name)
    assert sorted(actual) == sorted(expected)
    for key, value in expected.items():
        assert actual[key].shape == value.shape, key
        assert actual[key].dtype == value.dtype, key
        error = relative_error(value, actual[key])
        print(f"{name} {key}: max abs diff {np.abs(value - actual[key]).max():.3g}, relative {error:.3g}")
        assert error <= TOLERANCE, key


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
@pytest.mark.parametrize("embed_plan", [False, True])
def test_cmake_with_the_toolchain_file_builds_a_library_that_matches_reference(builds: LibraryBuilds, tmp_path: Path,
                                                                                embed_plan: bool) -> None:
    library = builds.library("tiny-transformer")
    binary = build_example(library, tmp_path / "cmake-build", system="cmake", embed_plan=embed_plan)
    assert (tmp_path / "cmake-build" / f"lib{library.name}.a").is_file()
    assert binary.read_bytes()[18] == 183  # ELF e_machine: EM_AARCH64
    actual = run_example(library, binary, samples.feeds("tiny-transformer"), embedded_plan=embed_plan).outputs
    for key, value in builds.reference("tiny-transformer").items():
        assert relative_error(value, actual[key]) <= TOLERANCE, key


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
@pytest.mark.parametrize("system", ["make", "cmake"])
def test_threads_give_the_one_thread_outputs_bit_for_bit(builds: LibraryBuilds, tmp_path: Path, system: str) -> None:
    """THREADS=1: the library with the thread pool, its example on 3 threads under qemu-aarch64 (real host threads),
    against the plain library's one-thread run and `reference`; without the pool, --threads is refused."""
    library = builds.library("ppocr-cls")
    feeds = builds.feeds("ppocr-cls")
    threaded = build_example(library, tmp_path / "threads", system=system, threads=True)
    one = builds.outputs("ppocr-cls")
    three = run_example(library, threaded, feeds, threads=3).outputs
    for key, value in builds.reference("ppocr-cls").items():
        assert np.array_equal(one[key], three[key]), key
        assert relative_error(value, three[key]) <= TOLERANCE, key
    with pytest.raises(EdgepackError, match="THREADS=1"):
        run_example(library, builds.binary("ppocr-cls"), feeds, threads=2)


def test_make_with_the_plan_linked_in_runs_without_the_plan_file(builds: LibraryBuilds, tmp_path: Path) -> None:
    library = builds.library("tiny-cnn")
    binary = build_example(library, tmp_path / "embedded", embed_plan=True)
    assert library.plan.read_bytes() in binary.read_bytes()
    actual = run_example(library, binary, samples.feeds("tiny-cnn"), embedded_plan=True).outputs
    for key, value in builds.reference("tiny-cnn").items():
        assert relative_error(value, actual[key]) <= TOLERANCE, key
