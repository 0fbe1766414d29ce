"""The model's own C API: `include/<model>.h` (create/run/destroy, one typed descriptor and data accessor per input
and output) and its implementation `src/<model>.c`, a thin wrapper over `edgepack.h`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from edgepack.runtime.native.epk import Plan

from .templates import render

C_TYPES = {"float32": "float", "uint8": "uint8_t", "int8": "int8_t", "int32": "int32_t", "int64": "int64_t",
           "bool": "uint8_t"}
EP_DTYPES = {"float32": "EP_F32", "uint8": "EP_U8", "int8": "EP_I8", "int32": "EP_I32", "int64": "EP_I64",
             "bool": "EP_BOOL"}


@dataclass(frozen=True)
class Port:
    """A model input or output as the plan fixes it."""

    name: str
    """The ONNX name."""
    ident: str
    """A C identifier made from the name, unique among the model's inputs or outputs."""
    dtype: str
    shape: tuple[int, ...]

    @property
    def bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while "
    "bool true false".split())


def c_identifier(name: str) -> str:
    """`name` with every character that is not an ASCII letter, digit or `_` made `_`; `m_` goes before one that
    starts with a digit or is a C keyword."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII).strip("_") or "model"
    return f"m_{ident}" if ident[0].isdigit() or ident.lower() in C_KEYWORDS else ident


def ports(plan: Plan, indices: list[int]) -> list[Port]:
    """The plan tensors at `indices` as ports, with C identifiers made unique among them."""
    taken: set[str] = set()
    found = []
    for index in indices:
        tensor = plan.tensors[index]
        ident = base = c_identifier(tensor.name).lower()
        suffix = 2
        while ident in taken:
            ident, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(ident)
        found.append(Port(tensor.name, ident, tensor.dtype, tuple(int(d) for d in tensor.shape)))
    return found


def c_string(text: str) -> str:
    """A C string literal of `text`'s UTF-8 bytes: ASCII letters, digits and ` ._-:/` as they are, others escaped."""
    safe = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._-:/")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03o}" for b in text.encode()) + '"'


def _descriptor(port: Port, index: int) -> str:
    dims = ", ".join(map(str, port.shape)) or "0"
    return (f"{{{c_string(port.name)}, {EP_DTYPES[port.dtype]}, {len(port.shape)}, {{{dims}}}, {port.bytes}u, "
            f"{index}u}}")


def _shape_text(port: Port) -> str:
    return f"{port.dtype} [{', '.join(map(str, port.shape))}]"


def header(model: str, inputs: list[Port], outputs: list[Port], version: str) -> str:
    declarations = []
    for kind, group, const in (("input", inputs, ""), ("output", outputs, "const ")):
        for port in group:
            c_type = C_TYPES[port.dtype]
            declarations += [
                f"/* {kind} {c_string(port.name)}: {_shape_text(port)}"
                + (" (bools as bytes, 0 or 1)" if port.dtype == "bool" else "") + " */",
                f"extern const {model}_tensor {model}_{kind}_{port.ident};",
                f"{const}{c_type} *{model}_{kind}_{port.ident}_data({const}{model} *model);",
                "",
            ]
    return render("model.h", MODEL=model, GUARD=f"{model.upper()}_H", PREFIX=model.upper(), VERSION=version,
                  INPUT_COUNT=str(len(inputs)), OUTPUT_COUNT=str(len(outputs)),
                  DECLARATIONS="\n".join(declarations).rstrip())


def source(model: str, inputs: list[Port], outputs: list[Port]) -> str:
    definitions = []
    for kind, group, const, getter in (("input", inputs, "", "input_data"), ("output", outputs, "const ",
                                                                             "output_data")):
        table = ",\n    ".join(_descriptor(port, i) for i, port in enumerate(group))
        definitions.append(f"const {model}_tensor {model}_{kind}s[{len(group) or 1}] = {{\n    {table or '{0}'}\n}};")
        for i, port in enumerate(group):
            c_type = C_TYPES[port.dtype]
            definitions += [
                f"const {model}_tensor {model}_{kind}_{port.ident} = {_descriptor(port, i)};",
                f"{const}{c_type} *{model}_{kind}_{port.ident}_data({const}{model} *model) {{",
                f"    return ({const}{c_type} *){model}_{getter}(model, {i});",
                "}",
            ]
        definitions.append("")
    return render("model.c", MODEL=model, PREFIX=model.upper(), DEFINITIONS="\n".join(definitions).rstrip())
