"""The Swift API of a model: identifiers from ONNX names, the typed wrapper `<Model>.swift`, and the pieces of the
XCTest and README that name the inputs and outputs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SWIFT_KEYWORDS = frozenset(
    "associatedtype class deinit enum extension fileprivate func import init inout internal let open operator private "
    "protocol public rethrows static struct subscript typealias var break case continue default defer do else "
    "fallthrough for guard if in repeat return switch where while as catch false is nil super self Self throw throws "
    "true try await async actor any some Type".split())

SWIFT_VALUES = {"float32": "Float", "float16": "UInt16", "int32": "Int32", "int64": "Int64", "int8": "Int8",
                "uint8": "UInt8", "bool": "Bool"}
"""The Swift element type of each tensor element type, for the plain-array forms (float16 as its bits: Swift's
Float16 does not exist on Intel Macs)."""
MULTIARRAY_TYPES = frozenset({"float32", "int32"})
"""Element types an `MLMultiArray` holds (and the wrapper takes or returns as one)."""


@dataclass(frozen=True)
class SwiftPort:
    name: str
    """The ONNX name."""
    ident: str
    """A Swift identifier made from it (lowerCamelCase), unique among the model's inputs or outputs."""
    dtype: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def values_type(self) -> str:
        return f"[{SWIFT_VALUES[self.dtype]}]"

    @property
    def multiarray(self) -> bool:
        return self.dtype in MULTIARRAY_TYPES

    def describe(self) -> str:
        return f"{self.dtype} {list(self.shape)}"


def words(name: str) -> list[str]:
    return [w for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name) if w]


def type_name(name: str) -> str:
    """UpperCamelCase: `ppocr-cls` -> `PpocrCls`; a leading digit gets `Model` before it."""
    joined = "".join(w[:1].upper() + w[1:] for w in words(name)) or "Model"
    return f"Model{joined}" if joined[0].isdigit() else joined


def member_name(name: str, keywords: frozenset[str] = SWIFT_KEYWORDS) -> str:
    """lowerCamelCase: `softmax_0.tmp_0` -> `softmax0Tmp0`; keywords and leading digits get `value` before them."""
    parts = words(name) or ["value"]
    joined = parts[0][:1].lower() + parts[0][1:] + "".join(w[:1].upper() + w[1:] for w in parts[1:])
    return f"value{joined[:1].upper()}{joined[1:]}" if joined[0].isdigit() or joined in keywords else joined


def unique_identifiers(names: list[str], identifier: Callable[[str], str], reserved: frozenset[str] = frozenset()
                       ) -> list[str]:
    """`identifier` of each name, with a number after those already taken (or in `reserved`)."""
    taken, made = set(reserved), []
    for name in names:
        ident = base = identifier(name)
        suffix = 2
        while ident in taken:
            ident, suffix = f"{base}{suffix}", suffix + 1
        taken.add(ident)
        made.append(ident)
    return made


def swift_ports(values: list[tuple[str, str, tuple[int, ...]]], reserved: frozenset[str] = frozenset()
                ) -> list[SwiftPort]:
    """(name, dtype, shape) as ports with unique identifiers (none in `reserved`)."""
    idents = unique_identifiers([name for name, _, _ in values], member_name, reserved)
    return [SwiftPort(name, ident, dtype, shape) for (name, dtype, shape), ident in zip(values, idents)]


def swift_string(text: str) -> str:
    """A one-line Swift string literal of `text`: backslashes and quotes escaped (so no `\\(` interpolation), control
    characters and line separators as `\\u{...}`."""
    return '"' + "".join(_swift_character(c) for c in text) + '"'


def _swift_character(character: str) -> str:
    if character in '\\"':
        return "\\" + character
    if ord(character) < 0x20 or ord(character) == 0x7F or character in "\u2028\u2029\x85":
        return f"\\u{{{ord(character):x}}}"
    return character


def swift_dictionary(mapping: dict[str, str]) -> str:
    return "[" + ", ".join(f"{swift_string(k)}: {swift_string(v)}" for k, v in mapping.items()) + "]" \
        if mapping else "[:]"


def swift_list(items: list[str]) -> str:
    return "[" + ", ".join(swift_string(item) for item in items) + "]"


def tensor_from(port: SwiftPort, as_multiarray: bool) -> str:
    """Swift that makes the input's EdgepackTensor from the argument of the same name."""
    shape = f"[{', '.join(map(str, port.shape))}]"
    if as_multiarray and port.multiarray:
        return f"try EdgepackTensor({port.ident}, expecting: .{port.dtype}, shape: {shape})"
    return f"try EdgepackTensor({port.ident}, element: .{port.dtype}, shape: {shape})"


def predict_method(model: str, inputs: list[SwiftPort], as_multiarray: bool) -> str:
    parameters = ", ".join(f"{p.ident}: {'MLMultiArray' if as_multiarray and p.multiarray else p.values_type}"
                           for p in inputs)
    feeds = ",\n            ".join(f"{swift_string(p.name)}: {tensor_from(p, as_multiarray)}" for p in inputs)
    doc = "MLMultiArrays" if as_multiarray else "plain arrays in row-major order"
    return (f"    /// Runs the model on {doc}: "
            + "; ".join(f"`{p.ident}` {p.describe()}" for p in inputs) + ".\n"
            f"    public func predict({parameters}) async throws -> {model}Output {{\n"
            f"        try run([\n            {feeds},\n        ])\n"
            "    }\n")


def wrapper(model: str, description: str, steps: list[str], inputs: list[SwiftPort], outputs: list[SwiftPort]
            ) -> str:
    """`Sources/<Model>/<Model>.swift`: the actor with async `predict` and the typed output struct."""
    methods = [predict_method(model, inputs, as_multiarray=False)]
    if any(p.multiarray for p in inputs):
        methods.insert(0, predict_method(model, inputs, as_multiarray=True))
    shapes = ", ".join(f"{swift_string(p.name)}: [{', '.join(map(str, p.shape))}]" for p in inputs)
    fields, assignments = [], []
    for port in outputs:
        read = f"EdgepackTensor.named({swift_string(port.name)}, in: values)"
        if port.multiarray:
            fields.append(f"    /// `{port.name}`, {port.describe()}.\n    public let {port.ident}: MLMultiArray\n")
            assignments.append(f"        {port.ident} = try {read}.multiArray()\n")
        fields.append(f"    /// `{port.name}` as values in row-major order, {port.describe()}.\n"
                      f"    public let {port.ident}Values: {port.values_type}\n")
        assignments.append(f"        {port.ident}Values = try {read}.values(as: {SWIFT_VALUES[port.dtype]}.self)\n")
    step_lines = ",\n".join(f"            {step}" for step in steps)
    return (
        "// Generated by edgepack: the typed API of the model.\n"
        "import CoreML\nimport Foundation\n\n"
        f"/// {description}\n"
        f"public actor {model} {{\n"
        "    /// The input shapes, fixed when the package was built.\n"
        f"    public static let inputShapes: [String: [Int]] = [{shapes or ':'}]\n\n"
        "    private let steps: [EdgepackStep]\n\n"
        "    /// Loads the model; `configuration.computeUnits` chooses where CoreML runs it.\n"
        "    public init(configuration: MLModelConfiguration = MLModelConfiguration()) async throws {\n"
        f"        steps = [\n{step_lines},\n        ]\n"
        "    }\n\n"
        + "\n".join(methods) + "\n"
        f"    private func run(_ feeds: [String: EdgepackTensor]) throws -> {model}Output {{\n"
        "        var values = feeds\n"
        "        for step in steps {\n"
        "            try step.run(&values)\n"
        "        }\n"
        f"        return try {model}Output(values)\n"
        "    }\n"
        "}\n\n"
        f"/// The outputs of `{model}.predict`.\n"
        f"public struct {model}Output {{\n"
        + "".join(fields) + "\n"
        "    init(_ values: [String: EdgepackTensor]) throws {\n"
        + "".join(assignments) +
        "    }\n"
        "}\n")


def coreml_step(resource: str, version: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    return (f"try await CoreMLStep(resource: {swift_string(resource)}, version: {swift_string(version)}, "
            f"inputs: {swift_dictionary(inputs)}, outputs: {swift_dictionary(outputs)}, "
            "configuration: configuration)")


def core_step(resource: str, inputs: list[str], outputs: list[str]) -> str:
    return (f"try CoreStep(resource: {swift_string(resource)}, inputs: {swift_list(inputs)}, "
            f"outputs: {swift_list(outputs)})")


def stored_name(kind: str, port: SwiftPort) -> str:
    """The file name (without `.bin`) of a stored sample input or expected output."""
    return f"{kind}-{port.ident}"


def test_arguments(inputs: list[SwiftPort]) -> str:
    return ", ".join(f"{p.ident}: try stored({swift_string(stored_name('input', p))}, as: {SWIFT_VALUES[p.dtype]}.self)"
                     for p in inputs)


def test_checks(outputs: list[SwiftPort]) -> str:
    lines = []
    for port in outputs:
        expected = f"try stored({swift_string(stored_name('expected', port))}, as: {SWIFT_VALUES[port.dtype]}.self)"
        if port.dtype == "float32":
            lines.append(f"        XCTAssertGreaterThanOrEqual(cosine(output.{port.ident}Values, {expected}), "
                         f"minimumCosine, {swift_string(port.name)})")
        else:
            lines.append(f"        XCTAssertEqual(output.{port.ident}Values, {expected}, {swift_string(port.name)})")
    return "\n".join(lines)


def snippet(model: str, inputs: list[SwiftPort], outputs: list[SwiftPort]) -> str:
    """The README's usage: load, predict on plain arrays, read the first output."""
    arguments = ", ".join(f"{p.ident}: {p.ident}" for p in inputs)
    declarations = "\n".join(f"let {p.ident}: {p.values_type} = ...  // {p.describe()}, row-major" for p in inputs)
    return (f"import {model}\n\n{declarations}\n"
            f"let model = try await {model}()\n"
            f"let output = try await model.predict({arguments})\n"
            f"print(output.{outputs[0].ident}Values)")
