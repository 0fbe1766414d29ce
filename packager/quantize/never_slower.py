"""Never slower: int8 compute only for the op classes whose int8 form is clearly faster than fp32 on the runtime a
target ships to (at most `WORTH_IT` of fp32's latency), as `benchmarks/int8_speed.py` measured into `int8_speed.toml`
(int8 latency / fp32 latency)."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

import onnx

from edgepack.runtime.capability import attribute

TABLE = Path(__file__).with_name("int8_speed.toml")
WORTH_IT = 0.9
"""The most int8 / fp32 latency at which int8 compute is chosen. A gain under 10% is within this machine's timing
noise (the same cls build measured 0.97x under load and 1.0x idle, and shipped different bundles) and does not pay
for the fidelity int8 activations cost."""
FORM_CLASSES = {"static": frozenset({"Conv", "DepthwiseConv", "PointwiseConv", "MatMul", "Gemm"}),
                "dynamic": frozenset({"MatMul", "Gemm"})}
"""The op classes each int8 form computes in int8; the others keep int8 weights under float compute."""


@cache
def speed_table() -> dict[str, dict[str, dict[str, float]]]:
    """runtime -> op class -> int8 form -> int8 / fp32 latency on the slowest CPU kind measured. The table has one
    section per runtime and CPU kind (`[onnxruntime.avx2]`, `[onnxruntime.amx_int8]`, ...): a bundle's device is not
    known at build time, so int8 compute goes only where it is faster on every kind (OpenVINO's int8 MatMul is
    0.31x fp32 with AMX and 1.20x with AVX2 alone)."""
    slowest: dict[str, dict[str, dict[str, float]]] = {}
    for runtime, kinds in tomllib.loads(TABLE.read_text()).items():
        for ops in kinds.values():
            for op, forms in ops.items():
                for form, ratio in forms.items():
                    current = slowest.setdefault(runtime, {}).setdefault(op, {})
                    current[form] = max(current.get(form, 0.0), ratio)
    return slowest


def op_class(node: onnx.NodeProto, initializers: dict[str, onnx.TensorProto]) -> str | None:
    """The benchmark's op class of `node`: Conv, DepthwiseConv, PointwiseConv, MatMul or Gemm."""
    if node.op_type in ("MatMul", "Gemm"):
        return node.op_type
    if node.op_type != "Conv":
        return None
    group = int(attribute(node, "group", 1))
    kernel = list(attribute(node, "kernel_shape", []) or [])
    if not kernel and len(node.input) > 1 and node.input[1] in initializers:
        kernel = list(initializers[node.input[1]].dims[2:])
    if group > 1:
        return "DepthwiseConv"
    return "PointwiseConv" if kernel and all(k == 1 for k in kernel) else "Conv"


def slower_in_int8(model: onnx.ModelProto, runtime: str | None, form: str) -> frozenset[str]:
    """Top-level nodes of the classes `form` (static or dynamic) computes in int8 whose measured ratio on `runtime`
    (the one the target's bundles run on) is above WORTH_IT (a runtime without measurements, or none: all of them)."""
    ratios = speed_table().get(runtime or "", {})
    initializers = {t.name: t for t in model.graph.initializer}
    return frozenset(node.name for node in model.graph.node
                     if (kind := op_class(node, initializers)) in FORM_CLASSES[form]
                     and ratios.get(kind, {}).get(form, float("inf")) > WORTH_IT)
