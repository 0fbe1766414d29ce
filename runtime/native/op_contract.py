"""The op contract (`ops.toml`): plan op ids, kernels, parameter records, kinds, claims and WGSL files, read once.
Everything that must agree on an op is made from it: the C header `ops.h` and the kernel registry (written beside
the sources each time the core is built or shipped), the JS module `ops.js` of the web runtime, and the plan
writer's tables in `epk.py`.

    python -m edgepack.runtime.native.op_contract          # prints the op table as markdown (EPK.md refers to it)
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from . import kernel_choice

CONTRACT = Path(__file__).parent / "ops.toml"
MAX_SLOTS = 2


@dataclass(frozen=True)
class Claim:
    """ONNX ops a plan op (or the lowering itself) serves, on these dtypes, within these limits."""

    onnx: tuple[str, ...]
    dtypes: frozenset[str] | None
    limits: tuple[str, ...]
    gpu: bool | str
    kinds: tuple[str, ...]
    """The kinds of the plan op this claim lowers to (its ONNX op names unless given)."""
    gpu_limits: tuple[str, ...] = ()
    """Limits that hold only on WebGPU, whose WGSL kernel covers less than the C kernel."""
    via_float32: bool = False
    """Its kernel takes float32 only: float64, float16 and bfloat16 values are cast to float32 and back around it."""


@dataclass(frozen=True)
class WeightSlots:
    own_inputs: int
    own_params: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class PlanOp:
    id: int
    name: str
    kernel: str
    params: str
    gpu: bool
    wgsl: tuple[str, ...]
    claims: tuple[Claim, ...]
    weight_slots: WeightSlots | None
    any_dtype: bool = False
    """Its kernel checks every dtype itself; others see only the core dtypes (`[dtype_sets] held`)."""

    @property
    def c_name(self) -> str:
        return c_name(self.name)


@dataclass(frozen=True)
class Contract:
    dtypes: dict[str, int]
    dtype_sets: dict[str, frozenset[str]]
    """[dtype_sets], each expanded to its dtypes."""
    kinds: dict[str, tuple[str, ...]]
    kind_prefixes: dict[str, str]
    ops: tuple[PlanOp, ...]
    lowered: tuple[Claim, ...] = field(default=())

    @property
    def core_dtypes(self) -> frozenset[str]:
        """The dtypes every kernel takes (the `held` set); others only ops marked `any_dtype` read or write."""
        return self.dtype_sets["held"]

    def op(self, name: str) -> PlanOp:
        return next(op for op in self.ops if op.name == name)

    @property
    def via_float32(self) -> frozenset[str]:
        """The ONNX ops whose claims take wider floats through float32 (`via_float32`)."""
        return frozenset(name for claim, _ in self.claims() if claim.via_float32 for name in claim.onnx)

    def claims(self) -> list[tuple[Claim, PlanOp | None]]:
        """Every claim with the plan op it lowers to (None: folded or turned into weights by the lowering)."""
        return [*((claim, op) for op in self.ops for claim in op.claims), *((claim, None) for claim in self.lowered)]


def c_name(name: str) -> str:
    """`ChannelAffine` -> `CHANNEL_AFFINE`, `LSTM` -> `LSTM`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def expand(names: list[str], sets: dict[str, list[str]]) -> frozenset[str]:
    """Dtype names, with the names of [dtype_sets] (which may name other sets) replaced by their members."""
    return frozenset(d for name in names for d in (expand(sets[name], sets) if name in sets else [name]))


def _claim(entry: dict, sets: dict[str, list[str]]) -> Claim:
    names = entry.get("dtypes")
    dtypes = None if names is None else expand(names, sets)
    return Claim(tuple(entry["onnx"]), dtypes, tuple(entry.get("limits", ())), entry.get("gpu", True),
                 tuple(entry.get("kinds", entry["onnx"])), tuple(entry.get("gpu_limits", ())),
                 entry.get("via_float32", False))


@cache
def contract() -> Contract:
    """The parsed `ops.toml`; op ids must run 0, 1, 2, ... in table order."""
    table = tomllib.loads(CONTRACT.read_text())
    sets = table["dtype_sets"]
    ops = []
    for position, entry in enumerate(table["ops"]):
        if entry["id"] != position:
            raise ValueError(f"ops.toml: op {entry['name']!r} has id {entry['id']}, expected {position}")
        slots = entry.get("weight_slots")
        ops.append(PlanOp(entry["id"], entry["name"], entry["kernel"], entry["params"], entry.get("gpu", False),
                          tuple(entry.get("wgsl", ())), tuple(_claim(c, sets) for c in entry.get("claims", ())),
                          WeightSlots(slots["own_inputs"], slots["own_params"], tuple(slots["slots"]))
                          if slots else None, entry.get("any_dtype", False)))
    lowered = tuple(_claim(c, sets) for entry in table.get("lowered", ()) for c in entry["claims"])
    return Contract(table["dtypes"], {name: expand([name], sets) for name in sets},
                    {kind: tuple(v["names"]) for kind, v in table["kinds"].items()},
                    {kind: v["c_prefix"] for kind, v in table["kinds"].items()}, tuple(ops), lowered)


def c_header() -> str:
    """ops.h: op ids, kind enums and weight-slot layouts."""
    c = contract()
    lines = ["/* Generated from ops.toml by op_contract.py: do not edit. */", "#ifndef EP_OPS_H", "#define EP_OPS_H",
             "", "enum {"]
    lines += [f"    EP_OP_{op.c_name} = {op.id}," for op in c.ops]
    lines += [f"    EP_OP_COUNT = {len(c.ops)}", "};", ""]
    for kind, names in c.kinds.items():
        prefix = c.kind_prefixes[kind]
        lines.append(f"enum {{ {', '.join(f'{prefix}{c_name(n)}' for n in names)}, {prefix}KINDS }};")
    lines.append("")
    for op in c.ops:
        if op.weight_slots:
            s = op.weight_slots
            inputs = ", ".join(str(i) for i in (*s.slots, *(0,) * (MAX_SLOTS - len(s.slots))))
            layout = f"{s.own_inputs}, {s.own_params}, {len(s.slots)}, {{{inputs}}}"
            lines.append(f"#define EP_OP_{op.c_name}_SLOTS {layout}")
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def c_registry(kernels: dict[str, str] | None = None) -> str:
    """kernels/registry.c: op id -> kernel, for every op or only `kernels` (C op name -> symbol), when a bundle ships
    the kernels its plans use (the loader then refuses any other op id with EP_ERR_OP)."""
    chosen = kernels if kernels is not None else {op.c_name: op.kernel for op in contract().ops}
    symbols = ", ".join(dict.fromkeys(chosen.values()))
    entries = "\n".join(f"        [EP_OP_{name}] = &{symbol}," for name, symbol in chosen.items())
    any_dtype = [op.c_name for op in contract().ops if op.any_dtype and op.c_name in chosen]
    flags = "\n".join(f"        [EP_OP_{name}] = 1," for name in any_dtype) or "        0,"
    return ("/* Generated from ops.toml by op_contract.py: the one table from op id to kernel. */\n"
            '#include "../ep_internal.h"\n\n'
            f"extern const ep_kernel {symbols};\n\n"
            "const ep_kernel *ep_kernel_for(uint32_t op_id) {\n"
            "    static const ep_kernel *const table[EP_OP_COUNT] = {\n"
            f"{entries}\n"
            "    };\n"
            "    return op_id < EP_OP_COUNT ? table[op_id] : 0;\n"
            "}\n\n"
            "int ep_kernel_takes_any_dtype(uint32_t op_id) {\n"
            "    static const unsigned char flags[EP_OP_COUNT] = {\n"
            f"{flags}\n"
            "    };\n"
            "    return op_id < EP_OP_COUNT && flags[op_id];\n"
            "}\n")


def generated_c(kernels: dict[str, str] | None = None) -> dict[str, str]:
    """The core's generated files, by path under the core's root: ops.h and kernels/registry.c (with every kernel,
    or only `kernels`) from the contract, and kernels/kernel_choice.h from the kernel selection table."""
    return {"ops.h": c_header(), "kernels/registry.c": c_registry(kernels),
            "kernels/kernel_choice.h": kernel_choice.c_header()}


def write_generated_c(root: Path, kernels: dict[str, str] | None = None) -> None:
    """Writes the generated files with every kernel, or only `kernels`, under `root` (a build folder holding a copy
    of the sources)."""
    for relative, text in generated_c(kernels).items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


def gpu_kinds(op: PlanOp, kind: str) -> list[int]:
    """The kinds of `op` the WebGPU kernels run: those a claim that may go to the GPU lowers to."""
    names = contract().kinds[kind]
    on_gpu = {name for claim in op.claims if claim.gpu is True for name in claim.kinds}
    return [i for i, name in enumerate(names) if name in on_gpu]


def js_module() -> str:
    """ops.js: what the web runtime reads of the contract."""
    c = contract()
    dtypes = {code: name for name, code in c.dtypes.items()}
    op_files = {op.name: list(op.wgsl) for op in c.ops if op.gpu}
    kinds = {kind: gpu_kinds(c.op(kind), kind) for kind in ("Binary", "Unary")}
    slots = {op.name: [op.weight_slots.own_inputs, op.weight_slots.own_params] for op in c.ops
             if op.weight_slots and op.gpu}
    return "\n".join([
        "// Generated from runtime/native/ops.toml by op_contract.py: do not edit.",
        f"export const OPS = {json.dumps([op.name for op in c.ops])};",
        f"export const DTYPE_NAMES = {json.dumps(dtypes)};",
        f"export const BINARY_KINDS = {json.dumps(list(c.kinds['Binary']))};",
        f"export const UNARY_KINDS = {json.dumps(list(c.kinds['Unary']))};",
        f"export const GPU_KINDS = {json.dumps(kinds)};",
        f"export const OP_FILES = {json.dumps(op_files)};",
        f"export const WEIGHT_SLOTS = {json.dumps(slots)};",
        "",
    ])


def markdown_table() -> str:
    """The op table as EPK.md would show it."""
    c = contract()
    rows = ["| id | op | kernel | parameters | ONNX ops |", "|---|---|---|---|---|"]
    for op in c.ops:
        served = ", ".join(name for claim in op.claims for name in claim.onnx)
        rows.append(f"| {op.id} | {op.name} | `{op.kernel}` | {op.params} | {served} |")
    kinds = [f"- {kind} kinds: " + ", ".join(f"{i} {n}" for i, n in enumerate(names))
             for kind, names in c.kinds.items()]
    return "\n".join([*rows, "", *kinds]) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
