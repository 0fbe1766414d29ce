"""The web target: each partition lowered to an `.epk` plan at the pinned input shapes; the JS runtime runs the
`webgpu` ones with WGSL kernels (or on the wasm core when the browser has no adapter) and the rest on the wasm
core. The bundle is an npm-style ES module: package.json, index.js, index.d.ts, the runtime, the kernels the plans
need, the plans, a demo page and a README."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import NATIVE, wasm_core
from edgepack.runtime.native.epk import OPS, Plan, write
from edgepack.runtime.native.op_contract import js_module

from .. import WEIGHT_ONLY, BundleInput, register, write_file
from ..embedded import core_sources
from . import typings
from .gpu_kernels import KERNEL_FILES
from .templates import render

PRODUCT = "the web bundle"
RUNTIME = Path(__file__).parent / "runtime"
RUNTIME_FILES = ("session.js", "wasm.js")
CORE_ABI = NATIVE / "wasm" / "core.js"
"""The one decoder of the wasm core's ABI, shipped as runtime/core.js."""
CORE_WORKER = NATIVE / "wasm" / "worker.js"
"""A worker of the threaded core, shipped as runtime/wasm_worker.js."""
GPU_RUNTIME_FILES = ("webgpu.js", "webgpu_support.js", "webgpu_weights.js", "webgpu_buffers.js", "webgpu_pipelines.js",
                     "webgpu_geometry.js", "webgpu_lowerings.js", "webgpu_conv_gemm.js", "epk.js")
"""The WebGPU executor: webgpu.js (which session.js imports once a WebGPU device is open) and every module it
imports, ops.js (written from the op contract) aside."""
CORE = "runtime/edgepack.wasm"
THREADED_CORE = "runtime/edgepack-threads.wasm"
"""The same kernels built with atomics, which a cross-origin isolated page runs on several threads."""
KERNELS = "kernels"
EXAMPLE_ELEMENTS = 4096
"""Integer inputs up to this size keep the build sample's values in the demo (a sample rate, token ids)."""


def package_name(bundle: BundleInput) -> str:
    """An npm package name from the bundle name without its profile suffix: lower case, `-` for anything else."""
    name = bundle.name.removesuffix(f"-{bundle.profile.name}")
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._") or "model"


def gpu_refusal(plan: Plan) -> str | None:
    """Why the WGSL kernels cannot run this plan (an op they lack), or None; the JS runtime checks the same."""
    for index, op in enumerate(plan.ops):
        if op.kind not in KERNEL_FILES:
            return f"op {index} ({op.kind}) has no WebGPU kernel"
    return None


def ports(plan: Plan, indices: list[int]) -> list[dict[str, Any]]:
    return [{"name": plan.tensors[i].name, "dtype": plan.tensors[i].dtype, "dims": list(plan.tensors[i].shape)}
            for i in indices]


@register("web", "ES module: the wasm core, WebGPU kernels, .epk plans, index.d.ts, demo page", precisions=WEIGHT_ONLY,
          forms={"wasm": "plan", "webgpu": "plan"}, product=PRODUCT)
def write_bundle(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    from edgepack.runtime.version import __version__

    entries, model_partitions, kernels = [], [], set()
    plans = []
    for lowered in bundle.lowered:
        part, plan = lowered.partition, lowered.plan
        provider, reason = part.provider, None
        if provider == "webgpu" and (reason := gpu_refusal(plan)):
            provider = "wasm"
        if provider == "webgpu":
            kernels.update(file for op in plan.ops for file in KERNEL_FILES[op.kind])
        artifact = f"model/{part.id}.epk"
        write_file(staging / artifact, write(plan))
        plans.append(plan)
        entry = {"id": part.id, "provider": provider, "artifact": artifact, "inputs": part.inputs,
                 "outputs": part.outputs, "nodes": part.nodes, "ops": part.ops,
                 "plan_ops": sorted({op.kind for op in plan.ops})}
        if provider == "webgpu":
            entry["fallback"] = "wasm"
        if reason:
            entry["note"] = f"planned for webgpu, runs on wasm: {reason}"
        entries.append(entry)
        model_partitions.append({"id": part.id, "provider": provider, "plan": artifact, "inputs": part.inputs,
                                 "outputs": part.outputs})
    inputs, outputs = _model_ports(bundle, plans, "inputs"), _model_ports(bundle, plans, "outputs")
    for port in [*inputs, *outputs]:
        if port["dtype"] not in typings.ARRAY_TYPES:
            raise EdgepackError(f"the model's input or output {port['name']!r} is {port['dtype']}, which a web bundle "
                                "cannot pass to JavaScript (no typed array holds packed sub-byte values)",
                                where=port["name"], fix="cast it to a byte-sized dtype in the model, e.g. int8")
    name = package_name(bundle)
    model = {"name": name, "inputs": inputs, "outputs": outputs, "core": CORE, "threadedCore": THREADED_CORE,
             "kernels": KERNELS, "partitions": model_partitions}

    _write_runtime(staging, bool(kernels), plans)
    for file in sorted(kernels):
        write_file(staging / KERNELS / file, (RUNTIME / "kernels" / file).read_text())
    fields = {"MODEL": name, "VERSION": __version__, "PROFILE": bundle.profile.name}
    write_file(staging / "index.js", render("index.js", MODEL_JSON=json.dumps(model, indent=2), **fields))
    write_file(staging / "index.d.ts", typings.declarations(name, inputs, outputs))
    write_file(staging / "package.json", json.dumps(_package(name, __version__, bool(kernels)), indent=2) + "\n")
    demo = render("demo.html", EXAMPLE_JSON=json.dumps(_example(bundle, inputs)), **fields)
    write_file(staging / "demo" / "index.html", demo)
    write_file(staging / "README.md", render(
        "README.md", PACKAGE=name, SOURCE=bundle.model.graph.name or name,
        FEED_SNIPPET=", ".join(f"{json.dumps(i['name'])}: {{ data: new {typings.ARRAY_TYPES[i['dtype']]}"
                               f"({int(np.prod(i['dims']))}), dims: {i['dims']} }}" for i in inputs),
        OUTPUT_SNIPPET="\n".join(f"const {typings.identifier(o['name'])} = outputs[{json.dumps(o['name'])}];  "
                                 f"// {{ data: {typings.ARRAY_TYPES[o['dtype']]}, dims: {o['dims']} }}"
                                 for o in outputs),
        INPUT_LIST=", ".join(f"`{i['name']}` ({i['dtype']} {i['dims']})" for i in inputs),
        OUTPUT_LIST=", ".join(f"`{o['name']}` ({o['dtype']} {o['dims']})" for o in outputs),
        PARTITION_LIST=", ".join(f"{e['id']} on {e['provider']} ({e['nodes']} nodes)" for e in entries), **fields))
    return entries


def _model_ports(bundle: BundleInput, plans: list[Plan], kind: str) -> list[dict[str, Any]]:
    """The model's inputs (or outputs), in the model's order, as the plans that read (or write) them describe
    them."""
    graph = bundle.model.graph
    initializers = {t.name for t in graph.initializer}
    names = [v.name for v in (graph.input if kind == "inputs" else graph.output) if v.name not in initializers]
    found: dict[str, dict[str, Any]] = {}
    for plan in plans:
        for port in ports(plan, plan.inputs if kind == "inputs" else plan.outputs):
            found.setdefault(port["name"], port)
    return [found[name] for name in names]


def _example(bundle: BundleInput, inputs: list[dict[str, Any]]) -> dict[str, list[int]]:
    """The build sample's values of the small integer inputs, for the demo page."""
    example = {}
    for port in inputs:
        value = bundle.example.get(port["name"])
        if value is not None and np.issubdtype(np.asarray(value).dtype, np.integer) and \
                np.asarray(value).size <= EXAMPLE_ELEMENTS:
            example[port["name"]] = np.asarray(value).ravel().tolist()
    return example


def _package(name: str, version: str, gpu: bool) -> dict[str, Any]:
    return {
        "name": name, "version": "1.0.0", "description": f"{name}: an edgepack {version} web bundle",
        "type": "module", "main": "index.js", "types": "index.d.ts",
        "exports": {".": {"types": "./index.d.ts", "default": "./index.js"}, "./package.json": "./package.json"},
        "files": ["index.js", "index.d.ts", "runtime/", "model/", *(["kernels/"] if gpu else []), "demo/",
                  "README.md"],
        "sideEffects": False,
    }


def bundle_core(plans: list[Plan], threads: bool = False) -> Path:
    """The bundle's own wasm core (the threaded one with `threads`): the kernels of every op the plans use (WebGPU
    partitions' too, for they fall back to the wasm core) and the core files those need, compiled (and cached) for
    that set."""
    selection = core_sources.select(OPS[op.kind] for plan in plans for op in plan.ops)
    return wasm_core(selection.kernels, [NATIVE / path for path in selection.files if path.suffix == ".c"], threads)


WHOLE_LINE_COMMENT = re.compile(r"^[ \t]*(//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/[ \t]*)\n", re.MULTILINE)
"""A `//` comment or a `/* ... */` block that a line starts with and nothing follows."""


def shipped_js(text: str) -> str:
    """A runtime module as the bundle ships it: without the comments that take whole lines (the page fetches every
    byte; index.js and index.d.ts keep the documentation)."""
    return WHOLE_LINE_COMMENT.sub("", text)


def _write_runtime(staging: Path, gpu: bool, plans: list[Plan]) -> None:
    for file in RUNTIME_FILES + (GPU_RUNTIME_FILES if gpu else ()):
        write_file(staging / "runtime" / file, shipped_js((RUNTIME / file).read_text()))
    write_file(staging / "runtime" / "core.js", shipped_js(CORE_ABI.read_text()))
    write_file(staging / "runtime" / "wasm_worker.js", shipped_js(CORE_WORKER.read_text()))
    if gpu:
        write_file(staging / "runtime" / "ops.js", shipped_js(js_module()))
    (staging / CORE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(bundle_core(plans), staging / CORE)
    shutil.copyfile(bundle_core(plans, threads=True), staging / THREADED_CORE)
