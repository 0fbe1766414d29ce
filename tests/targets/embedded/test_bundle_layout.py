"""The layout of a C library bundle: files, the typed header, and a core trimmed to the plan's kernels."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples
from edgepack.runtime.native.build import NATIVE
from edgepack.targets.embedded.example_run import EMULATOR, build_example, read_library

from .library_builds import LibraryBuilds

FIXED_FILES = ["CMakeLists.txt", "Makefile", "README.md", "cmake/aarch64-linux-gnu.cmake", "example/main.c",
               "example/npy.c", "example/npy.h", "include/edgepack.h", "manifest.json", "src/ep_internal.h",
               "src/executor.c", "src/loader.c", "src/kernels/registry.c", "src/ops.h"]


def plan_op_ids(plan: bytes) -> set[int]:
    """The op ids of an .epk plan, read from its header and op table (EPK.md)."""
    n_ops, ops_offset = struct.unpack_from("<2I", plan, 6 * 4)
    return {struct.unpack_from("<H", plan, ops_offset + 16 * i)[0] for i in range(n_ops)}


def op_enum_names(bundle: Path) -> dict[int, str]:
    """The op ids the bundle's own ops.h (made from the op contract) gives."""
    return {int(n): name for name, n in re.findall(r"\bEP_OP_(\w+) = (\d+)", (bundle / "src" / "ops.h").read_text())}


def test_bundle_holds_plan_header_sources_build_files_and_example(builds: LibraryBuilds) -> None:
    bundle = builds.bundle("tiny-cnn")
    present = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert set(FIXED_FILES) <= present
    assert {"include/tiny_cnn.h", "src/tiny_cnn.c", "src/tiny_cnn_plan.S", "model/tiny_cnn.epk"} <= present
    assert (bundle / "model" / "tiny_cnn.epk").read_bytes()[:4] == b"EPK1"
    assert "aarch64-linux-gnu-gcc" in (bundle / "cmake" / "aarch64-linux-gnu.cmake").read_text()
    readme = (bundle / "README.md").read_text()
    assert "qemu-aarch64 ./build/tiny_cnn_example" in readme and "`image` (float32 [1, 3, 32, 32])" in readme


def test_header_declares_create_run_destroy_and_a_typed_descriptor_per_input_and_output(builds: LibraryBuilds
                                                                                        ) -> None:
    header = (builds.bundle("tiny-cnn") / "include" / "tiny_cnn.h").read_text()
    for declaration in ["ep_status tiny_cnn_create(const void *plan, size_t plan_len, tiny_cnn **model, char *error);",
                        "ep_status tiny_cnn_create_from_file(const char *path, tiny_cnn **model, char *error);",
                        "ep_status tiny_cnn_run(tiny_cnn *model);", "void tiny_cnn_destroy(tiny_cnn *model);",
                        '/* input "image": float32 [1, 3, 32, 32] */',
                        "extern const tiny_cnn_tensor tiny_cnn_input_image;",
                        "float *tiny_cnn_input_image_data(tiny_cnn *model);",
                        '/* output "probs": float32 [1, 10] */',
                        "const float *tiny_cnn_output_probs_data(const tiny_cnn *model);",
                        "#define TINY_CNN_INPUT_COUNT 1"]:
        assert declaration in header


def test_header_makes_c_names_of_onnx_names_and_types_each_dtype(builds: LibraryBuilds) -> None:
    header = (builds.bundle("silero-vad") / "include" / "silero_vad.h").read_text()
    assert "int64_t *silero_vad_input_sr_data(silero_vad *model);" in header
    assert "const float *silero_vad_output_staten_data(const silero_vad *model);" in header


def test_registry_holds_exactly_the_plan_kernels_and_unused_kernel_files_are_left_out(builds: LibraryBuilds
                                                                                       ) -> None:
    bundle = builds.bundle("tiny-if")
    names = op_enum_names(bundle)
    used = {names[i] for i in plan_op_ids((bundle / "model" / "tiny_if.epk").read_bytes())}
    registry = (bundle / "src" / "kernels" / "registry.c").read_text()
    assert set(re.findall(r"\[EP_OP_(\w+)\] = &", registry)) == used
    shipped = {p.name for p in (bundle / "src" / "kernels").glob("*.c")}
    assert not {"pool.c", "normalize.c", "reduce.c", "resize.c"} & shipped
    assert len(shipped) < len(list((NATIVE / "kernels").glob("*.c")))


def test_trimmed_library_refuses_a_plan_with_ops_it_left_out(builds: LibraryBuilds, tmp_path: Path) -> None:
    binary = builds.binary("tiny-if")
    image = tmp_path / "image.npy"
    np.save(image, samples.feeds("tiny-cnn")["image"])
    proc = subprocess.run([EMULATOR, str(binary), str(builds.library("tiny-cnn").plan), str(tmp_path), str(image),
                           str(image)], capture_output=True, text=True)
    assert proc.returncode == 3
    assert "bad op" in proc.stderr


def test_example_refuses_a_plan_built_for_other_shapes(builds: LibraryBuilds, tmp_path: Path) -> None:
    other = edgepack.build(samples.path("tiny-cnn"), profile="raspberry-pi", output_dir=tmp_path,
                           input_shapes={"image": (2, 3, 32, 32)}).bundle_dir
    image = tmp_path / "image.npy"
    np.save(image, samples.feeds("tiny-cnn")["image"])
    proc = subprocess.run([EMULATOR, str(builds.binary("tiny-cnn")), str(read_library(other).plan), str(tmp_path),
                           str(image)], capture_output=True, text=True)
    assert proc.returncode == 3
    assert "differ from tiny_cnn.h" in proc.stderr
    assert build_example(read_library(other), tmp_path / "build").is_file()
