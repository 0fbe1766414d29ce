"""The android target: a Gradle library module (prebuilt `jniLibs` per ABI, the plan in `assets/`, a generated Java
API) and the same library as an `.aar`. The model runs on the C core as one `.epk` plan, like the C library."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.epk import OPS, write

from ... import WEIGHT_ONLY, BundleInput, register, write_file
from ...embedded import c_api, core_sources
from ...embedded.c_library import core_plan
from . import java_api, native
from .templates import FOLDER as TEMPLATES
from .templates import render

PRODUCT = "the Android library"
CORE_PROVIDER = "neon"
JAVA_RELEASE = "8"
NATIVE_FOLDER = "native"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
"""Every zip entry's time, so that two builds of one model give the same bytes."""


def missing_tools() -> str | None:
    """None when this machine can build the module and the AAR, else what to install."""
    if not shutil.which("javac"):
        return "javac compiles the AAR's classes.jar (apt-get install default-jdk-headless)"
    return native.missing_tools()


@register("android", "Gradle library module and AAR: the NEON C core with a JNI bridge per ABI, .epk plan in "
          "assets, typed Java API", precisions=WEIGHT_ONLY, forms={CORE_PROVIDER: "plan"}, product=PRODUCT,
          missing=missing_tools)
def write_bundle(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    from edgepack.runtime.version import __version__

    part = bundle.lowered[0].partition
    plan = core_plan(bundle, PRODUCT)
    model = bundle.name.removesuffix(f"-{bundle.profile.name}")
    module = c_api.c_identifier(model).lower()
    package, cls = java_api.package_name(model), java_api.class_name(model)
    library, asset = f"{module}_edgepack", f"{module}.epk"
    ports = [[(p.name, p.dtype, p.shape) for p in c_api.ports(plan, group)] for group in (plan.inputs, plan.outputs)]
    inputs, outputs = java_api.java_ports(*ports)
    description = f"{model}, built by edgepack {__version__} for the {bundle.profile.name} profile"

    plan_bytes = write(plan)
    write_file(staging / "src" / "main" / "assets" / asset, plan_bytes)
    onnx_path = f"{part.id}.onnx"
    write_file(staging / onnx_path, part.model.SerializeToString(deterministic=True))
    entry = {"id": part.id, "provider": part.provider, "artifact": f"src/main/assets/{asset}", "onnx": onnx_path,
             "inputs": part.inputs, "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops}
    if bundle.trial:  # verified on its plan only: no libraries, Java or AAR
        return [entry]
    java = staging / "src" / "main" / "java" / Path(*package.split("."))
    write_file(java / f"{cls}.java", java_api.source(package, cls, library, asset, description, inputs, outputs))
    write_file(java / "EdgepackException.java", render("EdgepackException.java", PACKAGE=package))
    write_file(staging / "src" / "main" / "AndroidManifest.xml",
               render("AndroidManifest.xml", PACKAGE_ATTRIBUTE="", USES_SDK=""))
    selection = core_sources.select(OPS[op.kind] for op in plan.ops)
    sources = _write_native(staging / NATIVE_FOLDER, selection, java_api.jni_prefix(package, cls),
                            f"{package.replace('.', '/')}/EdgepackException", cls)
    libraries = {}
    for abi in native.ABIS:
        built = native.build(abi, sources, [staging / NATIVE_FOLDER, staging / NATIVE_FOLDER / "include"],
                             staging / "src" / "main" / "jniLibs" / abi.name / f"lib{library}.so")
        libraries[abi.name] = built.relative_to(staging).as_posix()
    write_file(staging / "build.gradle.kts", render(
        "build.gradle.kts", MODULE=module, DESCRIPTION=java_api.comment_text(description), VERSION=__version__,
        PROFILE=bundle.profile.name, PACKAGE=package, MIN_SDK=str(native.MIN_SDK)))
    write_file(staging / "consumer-rules.pro", render("consumer-rules.pro", PACKAGE=package, CLASS=cls))
    aar = f"{module}.aar"
    _write_aar(staging, staging / aar, package, java, libraries, asset)
    _write_readme(staging, module, model, package, cls, asset, len(plan_bytes), libraries, selection, inputs,
                  outputs, bundle.profile.name, __version__)
    android = {"module": module, "package": package, "class": cls, "library": library, "aar": aar,
               "min_sdk": native.MIN_SDK, "libraries": libraries,
               "inputs": [p.name for p in inputs], "outputs": [p.name for p in outputs]}
    return [{**entry, "android": android}]


def _write_native(folder: Path, selection: core_sources.CoreSelection, jni_prefix: str, exception: str, cls: str
                  ) -> list[Path]:
    """The C sources of the libraries: the core's selected files and the bridge; returns the files to compile."""
    sources = core_sources.write_sources(folder, selection)
    bridge = folder / "bridge"
    write_file(bridge / "jni_bridge.c", render("jni_bridge.c", JNI=jni_prefix, EXCEPTION=exception, CLASS=cls))
    for name in ("ep_jni.h", "freestanding.c"):
        write_file(bridge / name, (TEMPLATES / name).read_text())
    return [*sources, bridge / "jni_bridge.c", bridge / "freestanding.c"]


def compile_java(java: Path, output: Path) -> list[Path]:
    """Compiles the module's Java (Java 8 class files) into `output`; returns the class files of the module."""
    with tempfile.TemporaryDirectory() as tmp:
        annotations = Path(tmp) / "androidx" / "annotation"
        write_file(annotations / "NonNull.java", (TEMPLATES / "NonNull.java").read_text())
        classes = Path(tmp) / "classes"
        command = ["javac", "--release", JAVA_RELEASE, "-Xlint:-options", "-encoding", "UTF-8", "-d", str(classes),
                   *map(str, sorted(java.glob("*.java"))), str(annotations / "NonNull.java")]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise EdgepackError(f"compiling the generated Java failed: {proc.stderr.strip()[:2000]}",
                                where=str(java), fix="report this to edgepack with the model's input and output names")
        shutil.rmtree(classes / "androidx")
        shutil.copytree(classes, output, dirs_exist_ok=True)
    return sorted(output.rglob("*.class"))


def _zip_entry(archive: zipfile.ZipFile, name: str, data: bytes, compress: bool = True) -> None:
    info = zipfile.ZipInfo(name, ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)


def _write_aar(staging: Path, aar: Path, package: str, java: Path, libraries: dict[str, str], asset: str) -> None:
    """The AAR: manifest, classes.jar, jni/<abi>/, assets/, R.txt and the consumer ProGuard rules."""
    with tempfile.TemporaryDirectory() as tmp:
        classes = compile_java(java, Path(tmp) / "classes")
        jar = Path(tmp) / "classes.jar"
        with zipfile.ZipFile(jar, "w") as archive:
            _zip_entry(archive, "META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: edgepack\r\n\r\n")
            for path in classes:
                _zip_entry(archive, path.relative_to(Path(tmp) / "classes").as_posix(), path.read_bytes())
        with zipfile.ZipFile(aar, "w") as archive:
            manifest = render("AndroidManifest.xml", PACKAGE_ATTRIBUTE=f' package="{package}"',
                              USES_SDK=f'\n    <uses-sdk android:minSdkVersion="{native.MIN_SDK}" />')
            _zip_entry(archive, "AndroidManifest.xml", manifest.encode())
            _zip_entry(archive, "classes.jar", jar.read_bytes())
            for abi, path in libraries.items():
                _zip_entry(archive, f"jni/{abi}/{Path(path).name}", (staging / path).read_bytes())
            _zip_entry(archive, f"assets/{asset}", (staging / "src" / "main" / "assets" / asset).read_bytes(),
                       compress=False)
            _zip_entry(archive, "R.txt", b"")
            _zip_entry(archive, "proguard.txt", (staging / "consumer-rules.pro").read_bytes())


def _write_readme(staging: Path, module: str, model: str, package: str, cls: str, asset: str, plan_bytes: int,
                  libraries: dict[str, str], selection: core_sources.CoreSelection, inputs: list[java_api.JavaPort],
                  outputs: list[java_api.JavaPort], profile: str, version: str) -> None:
    rows = "\n".join(f"| {abi} | `{path}` | {(staging / path).stat().st_size:,} |" for abi, path in libraries.items())
    write_file(staging / "README.md", render(
        "README.md", MODULE=module, MODEL_NAME=f"`{model}`", VERSION=version, PROFILE=profile, ASSET=asset,
        LIBRARIES=rows, PLAN_BYTES=f"{plan_bytes:,}", KERNELS=", ".join(sorted(selection.kernels)).lower(),
        PACKAGE=package, CLASS=cls,
        RUN_PARAMETERS=", ".join(f"{p.ident}: {p.element.capitalize()}Array" for p in inputs),
        RUN_ARGUMENTS=", ".join(p.ident for p in inputs),
        INPUT_LIST=", ".join(f"`{p.ident}` ({p.describe()})" for p in inputs),
        OUTPUT_LIST=", ".join(f"`{p.ident}` ({p.describe()})" for p in outputs)))
