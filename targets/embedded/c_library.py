"""The embedded target: a C library bundle. The model is lowered to one `.epk` plan at its pinned input shapes and
shipped with the C core trimmed to the kernels the plan uses, a typed header, an example that reads and writes
`.npy`, a Makefile, a CMakeLists.txt with an aarch64 toolchain file, and a README."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.epk import OPS, Plan, write
from edgepack.runtime.native.op_contract import generated_c

from .. import WEIGHT_ONLY, BundleInput, register, write_file
from . import c_api, core_sources
from .templates import render

CORE_PROVIDERS = ("neon", "cpu")
"""Providers whose partitions the C core runs: the library holds one such partition and nothing else."""
PLAN_FOLDER = "model"
TOOLCHAIN = "cmake/aarch64-linux-gnu.cmake"
NPY_SOURCES = ("npy.c", "npy.h")
PRODUCT = "the C library"


def library_name(bundle: BundleInput) -> str:
    """The C name of the model: the bundle name without its profile suffix, as an identifier (`tiny-cnn` ->
    `tiny_cnn`)."""
    return c_api.c_identifier(bundle.name.removesuffix(f"-{bundle.profile.name}")).lower()


def core_plan(bundle: BundleInput, product: str = PRODUCT) -> Plan:
    """The plan of the one partition the C core runs: a profile whose providers split the model cannot make a
    library of it."""
    if len(bundle.lowered) != 1 or bundle.lowered[0].form != "plan":
        found = ", ".join(f"{low.partition.id} ({low.partition.provider})" for low in bundle.lowered)
        raise EdgepackError(f"{product} runs one partition on the C core, and this model was split into {found}",
                            where=f"{bundle.profile.target} target",
                            fix=f"use a profile whose providers are only one of {', '.join(CORE_PROVIDERS)}")
    return bundle.lowered[0].plan


@register("embedded", "C library: the runtime core with the model's kernels, .epk plan, header, Make/CMake, example",
          precisions=WEIGHT_ONLY, forms=dict.fromkeys(CORE_PROVIDERS, "plan"), product=PRODUCT)
def write_bundle(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    from edgepack.runtime.version import __version__

    part = bundle.lowered[0].partition
    plan = core_plan(bundle)
    name = library_name(bundle)
    selection = core_sources.select(OPS[op.kind] for op in plan.ops)
    inputs, outputs = c_api.ports(plan, plan.inputs), c_api.ports(plan, plan.outputs)

    write_file(staging / PLAN_FOLDER / f"{name}.epk", write(plan))
    sources = _write_core(staging, selection)
    write_file(staging / "include" / f"{name}.h", c_api.header(name, inputs, outputs, __version__))
    write_file(staging / "src" / f"{name}.c", c_api.source(name, inputs, outputs))
    write_file(staging / "src" / f"{name}_plan.S", render("plan.S", MODEL=name))
    sources.append(f"src/{name}.c")
    _write_build_files(staging, name, sorted(sources))
    input_list = c_api.c_string(", ".join(port.name for port in inputs))  # a C string literal, in a comment too
    write_file(staging / "example" / "main.c", render("main.c", MODEL=name, PREFIX=name.upper(),
                                                      INPUT_LIST=input_list))
    for file in NPY_SOURCES:
        write_file(staging / "example" / file, (core_sources.NATIVE / "cli" / file).read_text())
    for folder, file in (("include", "ep_pool.h"), ("include", "ep_loop.h"), ("src", "ep_pool.c")):
        write_file(staging / folder / file, (core_sources.NATIVE / "pool" / file).read_text())
    write_file(staging / "README.md", render(
        "README.md", MODEL=name, VERSION=__version__, PROFILE=bundle.profile.name,
        KERNELS=", ".join(sorted(selection.kernels)).lower(),
        SHAPES="; ".join(f"{p.name} {list(p.shape)}" for p in inputs),
        INPUT_FILES=" ".join(f"{c_api.c_identifier(p.name)}.npy" for p in inputs),
        INPUT_LIST=", ".join(f"`{p.name}` ({p.dtype} {list(p.shape)})" for p in inputs),
        OUTPUT_LIST=", ".join(f"`{p.name}` ({p.dtype} {list(p.shape)})" for p in outputs)))
    plan_path = f"{PLAN_FOLDER}/{name}.epk"
    library = {"name": name, "plan": plan_path, "header": f"include/{name}.h",
               "inputs": [p.name for p in inputs], "outputs": [p.name for p in outputs],
               "kernels": sorted(selection.kernels.values()), "shapes": {p.name: list(p.shape) for p in inputs}}
    onnx_path = f"{part.id}.onnx"
    write_file(staging / onnx_path, part.model.SerializeToString(deterministic=True))
    return [{"id": part.id, "provider": part.provider, "artifact": plan_path, "onnx": onnx_path, "inputs": part.inputs,
             "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops, "library": library}]


def _write_core(staging: Path, selection: core_sources.CoreSelection) -> list[str]:
    """Copies the selected core files under src/ (edgepack.h under include/) and writes ops.h and the trimmed registry;
    returns the library's .c files."""
    sources = []
    for relative in selection.files:
        target = staging / "include" / relative.name if relative.parts[0] == "include" else staging / "src" / relative
        write_file(target, (core_sources.NATIVE / relative).read_text())
        if relative.suffix == ".c":
            sources.append(f"src/{relative.as_posix()}")
    for relative, text in generated_c(selection.kernels).items():
        write_file(staging / "src" / relative, text)
        if relative.endswith(".c"):
            sources.append(f"src/{relative}")
    return sources


def _write_build_files(staging: Path, name: str, sources: list[str]) -> None:
    fields = {"MODEL": name, "PREFIX": name.upper()}
    write_file(staging / "Makefile", render("Makefile", LIBRARY_SOURCES=" \\\n    ".join(sources), **fields))
    write_file(staging / "CMakeLists.txt", render("CMakeLists.txt", CMAKE_SOURCES="\n  ".join(sources), **fields))
    write_file(staging / TOOLCHAIN, render("aarch64-linux-gnu.cmake"))
