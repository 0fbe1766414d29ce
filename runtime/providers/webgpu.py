"""The `webgpu` provider: WGSL kernels driven by the web bundle's JS runtime (`targets/web/runtime/webgpu.js`).
It claims the float32 ops those kernels cover; its partitions are `.epk` plans like the wasm core's, so outside a
browser (here, in the verify stage) they run on the wasm core, exactly as the browser runs them when it has no
WebGPU adapter. The browser tests and `edgepack bench BUNDLE --device chromium` run the WGSL kernels themselves."""

from __future__ import annotations

import onnx

from edgepack.runtime.errors import EdgepackError

from ..capability import OpClaim, PlanCapability, Values
from ..native.op_contract import contract
from . import CompiledPartition, Options, Provider, register
from .cpu_claims import Limit, claim_of, every, limit_named
from .wasm import compile_partition, load_plan, missing

HEAVY_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm"})
"""A partition without one of these is not worth the trip to the GPU and back: it stays on wasm."""


def float_data(limit: Limit | None) -> Limit:
    """The op's own limit, and float32 on every value that is not a constant (shapes, axes and pads are
    constants folded at lowering; the kernels hold float32 tensors only)."""

    def check(node: onnx.NodeProto, values: Values) -> str | None:
        names = [name for name in [*node.input, *node.output] if name and name not in values.constants]
        if any(values.types.get(name) != "float32" for name in names):
            return "WebGPU kernels take float32 tensors only"
        return limit(node, values) if limit else None

    return check


def on_constants(limit: Limit | None) -> Limit:
    def check(node: onnx.NodeProto, values: Values) -> str | None:
        if any(name not in values.constants for name in node.input if name):
            return "only on constant weights"
        return limit(node, values) if limit else None

    return check


def _claims() -> list[OpClaim]:
    """The claims of the plan ops WGSL kernels run (float32 data only), and the weight chains on constants, from the
    op contract: a claim marked `gpu = false` stays off the GPU."""
    claims = []
    for claim, op in contract().claims():
        gpu_op = op is not None and op.gpu
        for onnx_op in claim.onnx:
            cpu = claim_of(onnx_op, claim)
            if claim.gpu is True and gpu_op:
                limit = every(*(limit_named(name) for name in claim.gpu_limits), *([cpu.limit] if cpu.limit else []))
                claims.append(OpClaim(onnx_op, cpu.domain, cpu.opsets, cpu.dtypes, float_data(limit)))
            elif claim.gpu == "constants":
                claims.append(OpClaim(onnx_op, cpu.domain, cpu.opsets, cpu.dtypes, on_constants(cpu.limit)))
    return claims


def compile_heavy(model: onnx.ModelProto, options: Options) -> CompiledPartition:
    """The partition as plans, refused (so the partitioner leaves it to wasm) when it has no heavy op."""
    if not any(node.op_type in HEAVY_OPS for node in model.graph.node):
        raise EdgepackError(f"a WebGPU partition needs one of {', '.join(sorted(HEAVY_OPS))} to be worth the upload "
                            "and readback", where="webgpu provider", fix="run it on wasm")
    return compile_partition(model, options)


PROVIDER = register(Provider("webgpu", "WGSL kernels in the web bundle's JS runtime (its plans run on the wasm core "
                                       "outside a browser)",
                             PlanCapability(_claims()), compile_heavy, load=load_plan, missing=missing))
