"""Bytes an Android app ships to run each sample model: edgepack's android bundle per ABI (the JNI library, which holds
the C core with the model's kernels, plus the `.epk` plan) beside onnxruntime's arm64 runtime library.

    python benchmarks/android_size.py [model ...]

edgepack: `edgepack.build(model, profile="android", verify=False)` at the shapes of `samples.feeds(model)`; per ABI,
the bytes of `src/main/jniLibs/<abi>/lib<model>_edgepack.so` and of the plan in `src/main/assets/`.

onnxruntime: its runtime library alone (the model file comes on top, and is about the plan's size), two figures:
- measured: `onnxruntime/capi/libonnxruntime.so.<version>` in PyPI's manylinux aarch64 wheel of onnxruntime
  (`pip download --platform manylinux_2_27_aarch64`, into edgepack's cache), the same runtime built for Linux arm64;
- published: `jni/arm64-v8a/libonnxruntime.so` of onnxruntime-android 1.22.0, 18,214,224 bytes, as its Git LFS
  pointer records it in https://huggingface.co/CyberTimon/RapidRAW-Models (onnxruntimes-v1.22.0/
  libonnxruntime-android-arm64-v8a.so). The AAR itself is on Maven Central, which this machine cannot reach.
Columns: the plan, each ABI's library, the arm64 library over onnxruntime-android's, and what an app carries for the
model on arm64 (library + plan over onnxruntime's library + the source .onnx). Target: the arm64 library at most
1/100 of onnxruntime-android's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

import edgepack
from edgepack import samples
from edgepack.runtime.native.build import cache_root
from edgepack.targets.mobile.android import native

ORT_VERSION = "1.22.0"
ORT_ANDROID_ARM64_BYTES = 18_214_224
"""onnxruntime-android 1.22.0's jni/arm64-v8a/libonnxruntime.so, as published (see the module docstring)."""
RATIO_TARGET = 100


def ort_aarch64_library_bytes() -> int:
    """The size of libonnxruntime.so in PyPI's onnxruntime manylinux aarch64 wheel (downloaded once)."""
    folder = cache_root().parent / "benchmarks" / f"onnxruntime-{ORT_VERSION}-aarch64"
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", f"onnxruntime=={ORT_VERSION}", "--no-deps",
                        "--only-binary=:all:", "--platform", "manylinux_2_27_aarch64", "--python-version", "3.11",
                        "-d", str(folder)], check=True)
        wheels = sorted(folder.glob("*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        return next(info.file_size for info in wheel.infolist()
                    if info.filename.startswith("onnxruntime/capi/libonnxruntime.so"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=samples.names())
    args = parser.parse_args()
    console = Console(width=150)
    measured = ort_aarch64_library_bytes()
    console.print(f"onnxruntime {ORT_VERSION} libonnxruntime.so: {measured:,} bytes (PyPI manylinux aarch64 wheel, "
                  f"measured); {ORT_ANDROID_ARM64_BYTES:,} bytes (onnxruntime-android arm64-v8a, published)")
    table = Table(title="android bundle bytes per ABI beside onnxruntime-android's arm64 library")
    for column in ["model", "plan", *(f"{abi.name} .so" for abi in native.ABIS), "arm64 .so / ORT .so",
                   "arm64 .so + plan / ORT .so + model"]:
        table.add_column(column, justify="left" if column == "model" else "right")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            shapes = {key: value.shape for key, value in samples.feeds(name).items()}
            result = edgepack.build(samples.path(name), profile="android", output_dir=Path(tmp), input_shapes=shapes,
                                    verify=False)
            info = result.manifest["partitions"][0]["android"]
            plan = (result.bundle_dir / result.manifest["partitions"][0]["artifact"]).stat().st_size
            sizes = {abi: (result.bundle_dir / path).stat().st_size for abi, path in info["libraries"].items()}
            model = samples.path(name).stat().st_size
            ratios.append(ORT_ANDROID_ARM64_BYTES / sizes["arm64-v8a"])
            table.add_row(name, f"{plan:,}", *(f"{sizes[abi.name]:,}" for abi in native.ABIS),
                          f"1/{ratios[-1]:.0f}",
                          f"1/{(ORT_ANDROID_ARM64_BYTES + model) / (sizes['arm64-v8a'] + plan):.1f}")
    console.print(table)
    smallest = min(ratios)
    console.print(f"runtime bytes, arm64: edgepack's library is at most 1/{smallest:.0f} of onnxruntime-android's "
                  f"(target 1/{RATIO_TARGET}: {'met' if smallest >= RATIO_TARGET else 'not met'})")

if __name__ == "__main__":
    main()
