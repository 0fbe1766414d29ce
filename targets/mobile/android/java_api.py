"""The Java API of a model: the package and class names, typed ports, and the generated `<Model>.java` over the JNI
bridge (only `java.*` and the androidx nullability annotations, which Kotlin reads)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...embedded.c_api import Port, c_identifier
from ..swift_api import member_name as swift_member_name
from ..swift_api import type_name, unique_identifiers
from .templates import render

JAVA_KEYWORDS = frozenset(
    "abstract assert boolean break byte case catch char class const continue default do double else enum extends final "
    "finally float for goto if implements import instanceof int interface long native new package private protected "
    "public return short static strictfp super switch synchronized this throw throws transient try void volatile while "
    "true false null var yield record sealed permits".split())

ELEMENTS = {"float32": ("float", "Float"), "int32": ("int", "Int"), "int64": ("long", "Long"),
            "uint8": ("byte", "Byte"), "int8": ("byte", "Byte"), "bool": ("byte", "Byte")}
"""Tensor element type -> (Java array element, java.nio buffer kind); bools are bytes 0 or 1."""


@dataclass(frozen=True)
class JavaPort(Port):
    """A model input or output, its `ident` a lowerCamelCase Java identifier unique among the inputs and outputs."""

    @property
    def count(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def element(self) -> str:
        return ELEMENTS[self.dtype][0]

    @property
    def buffer(self) -> str:
        return f"{ELEMENTS[self.dtype][1]}Buffer"

    @property
    def upper(self) -> str:
        return self.ident[:1].upper() + self.ident[1:]

    @property
    def constant(self) -> str:
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.ident).upper()

    def describe(self) -> str:
        note = " (bools as bytes, 0 or 1)" if self.dtype == "bool" else ""
        return f"{self.dtype} {list(self.shape)}{note}"


def package_name(model: str) -> str:
    """`ai.edgepack.<model as a lowercase identifier>`: the Java package and the Gradle namespace."""
    ident = c_identifier(model).lower()
    return f"ai.edgepack.{ident}_model" if ident in JAVA_KEYWORDS else f"ai.edgepack.{ident}"


def class_name(model: str) -> str:
    name = type_name(model)
    return f"{name}Model" if name in ("EdgepackException", "Outputs") else name


def member_name(name: str) -> str:
    """lowerCamelCase of the name's ASCII words; keywords and leading digits get `value` before them."""
    return swift_member_name(c_identifier(name), JAVA_KEYWORDS)


def java_ports(inputs: list[tuple[str, str, tuple[int, ...]]], outputs: list[tuple[str, str, tuple[int, ...]]]
               ) -> tuple[list[JavaPort], list[JavaPort]]:
    """(name, dtype, shape) of inputs and outputs as ports whose identifiers are unique across both."""
    values = [*inputs, *outputs]
    idents = unique_identifiers([name for name, _, _ in values], member_name)
    made = [JavaPort(name, ident, dtype, shape) for (name, dtype, shape), ident in zip(values, idents)]
    return made[:len(inputs)], made[len(inputs):]


def java_string(text: str) -> str:
    """A Java string literal: printable ASCII as it is, `"` and `\\` escaped, other ASCII as octal escapes and the
    rest as \\u escapes of UTF-16 code units (javac turns those into characters before it reads the literal, so a
    quote or line break must never be one)."""
    data = text.encode("utf-16-le")
    out = []
    for code in (int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)):
        char = chr(code)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7f:
            out.append(char)
        else:
            out.append(f"\\{code:03o}" if code < 0x80 else f"\\u{code:04x}")
    return '"' + "".join(out) + '"'


def comment_text(text: str) -> str:
    """Text safe inside a /* */ or javadoc comment: no `*/`, no backslash (javac reads \\u escapes in comments),
    no line breaks, HTML-escaped for javadoc."""
    safe = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\\", "&#92;")
    return re.sub(r"[\x00-\x1f\x7f\u2028\u2029]", " ", safe).replace("*/", "*&#47;").replace("@", "&#64;")


def _port_doc(kind: str, port: JavaPort) -> str:
    return f"{kind} {comment_text(port.name)}: {port.describe()}"


def source(package: str, cls: str, library: str, asset: str, description: str, inputs: list[JavaPort],
           outputs: list[JavaPort]) -> str:
    buffers = sorted({port.buffer for port in [*inputs, *outputs]} - {"ByteBuffer"})
    constants, fields, bindings, accessors = [], [], [], []
    for kind, group, is_output in (("input", inputs, False), ("output", outputs, True)):
        for index, port in enumerate(group):
            field = f"{kind}{port.upper}"
            constants += [f"    /** Values in {_port_doc(kind, port)}. */",
                          f"    public static final int {kind.upper()}_{port.constant}_SIZE = {port.count};"]
            fields.append(f"    private final {port.buffer} {field};")
            view = f"view(raw, nativeDataOffset(raw, session, {str(is_output).lower()}, {index}, {port.bytes}L), " \
                   f"{port.bytes}L)"
            typed = "" if port.buffer == "ByteBuffer" else f".as{port.buffer}()"
            bindings.append(f"        this.{field} = {view}{typed};")
            access = "read-only, valid after run()" if is_output else "write it before run()"
            value = f"{field}.asReadOnlyBuffer()" if is_output else f"{field}.duplicate()"
            accessors += [f"    /** The {_port_doc(kind, port)}, in the runtime's memory ({access}). */",
                          "    @NonNull",
                          f"    public synchronized {port.buffer} {field}() {{",
                          "        open();",
                          f"        return {value};",
                          "    }", ""]
    return render("Model.java", PACKAGE=package, CLASS=cls, LIBRARY=library, ASSET=asset,
                  DESCRIPTION=comment_text(description),
                  IMPORTS="\n".join(f"import java.nio.{name};" for name in buffers),
                  CONSTANTS="\n".join(constants), FIELDS="\n".join(fields), BINDINGS="\n".join(bindings),
                  RUN=_run_with_arrays(inputs, outputs), ACCESSORS="\n".join(accessors).rstrip())


def _run_with_arrays(inputs: list[JavaPort], outputs: list[JavaPort]) -> str:
    lines = ["    /** The outputs of {@link #run(" + ", ".join(f"{p.element}[]" for p in inputs) + ")}, as arrays. */",
             "    public static final class Outputs {"]
    for port in outputs:
        lines += [f"        /** {_port_doc('output', port)}, row-major. */",
                  f"        @NonNull public final {port.element}[] {port.ident};"]
    lines += ["", "        Outputs(" + ", ".join(f"{p.element}[] {p.ident}" for p in outputs) + ") {"]
    lines += [f"            this.{p.ident} = {p.ident};" for p in outputs]
    lines += ["        }", "    }", ""]
    doc = "; ".join(f"{{@code {p.ident}}}: {_port_doc('input', p)}" for p in inputs)
    parameters = ", ".join(f"@NonNull {p.element}[] {p.ident}" for p in inputs)
    lines += [f"    /** Copies the inputs in, runs, and copies the outputs out (row-major arrays). {doc}. */",
              "    @NonNull",
              f"    public synchronized Outputs run({parameters}) throws EdgepackException {{",
              "        open();"]
    for port in inputs:
        size = f"INPUT_{port.constant}_SIZE"
        takes, values = java_string(f"input {port.name!r} takes "), java_string(f" values ({port.describe()}), not ")
        lines += [f"        if ({port.ident}.length != {size}) {{",
                  f"            throw new IllegalArgumentException({takes} + {size} + {values} + {port.ident}.length);",
                  "        }",
                  f"        input{port.upper}.duplicate().put({port.ident});"]
    lines.append("        run();")
    for port in outputs:
        lines += [f"        {port.element}[] {port.ident} = new {port.element}[OUTPUT_{port.constant}_SIZE];",
                  f"        output{port.upper}.duplicate().get({port.ident});"]
    lines += ["        return new Outputs(" + ", ".join(p.ident for p in outputs) + ");", "    }"]
    return "\n".join(lines)


def jni_prefix(package: str, cls: str) -> str:
    """`Java_<package>_<class>` with the JNI name mangling (`_` -> `_1`; the names are ASCII identifiers)."""
    return "Java_" + "_".join(part.replace("_", "_1") for part in [*package.split("."), cls])
