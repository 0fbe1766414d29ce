"""The `coreml` provider: ONNX partitions converted to CoreML ML Programs with coremltools' MIL builder
(`convert.py`, one converter per op in `ops/`). On macOS a partition runs on CoreML; elsewhere CoreML cannot run,
and the saved program is evaluated with numpy (`evaluate.py`) so that the bundle is still verified."""

from __future__ import annotations

import platform
import tempfile
from pathlib import Path

import numpy as np
import onnx

from ...capability import Capability, OpClaim, Values
from .. import Options, Provider, register
from .convert import CONSTANT_FORMS, to_mlpackage
from .evaluate import MilEvaluator, load_program
from .mil import coremltools, missing
from .ops import CONVERTERS, Converter, Limit

FLOATS = frozenset({"float32", "float16"})
"""CoreML computes in float32/float16; other types are only constants (shapes, axes) folded at conversion."""


def typed(converter: Converter) -> Limit:
    """The converter's own limit, after its element types on every value that is not a constant."""
    allowed = converter.types or FLOATS

    def check(node: onnx.NodeProto, values: Values) -> str | None:
        names = [name for name in [*node.input, *node.output] if name and name not in values.constants]
        outside = sorted({values.types.get(name) or "unknown" for name in names} - allowed)
        if outside:
            return f"CoreML takes {'/'.join(sorted(allowed))} here, not {', '.join(outside)}"
        return converter.limit(node, values) if converter.limit else None

    return check


def constant_limit(node: onnx.NodeProto, values: Values) -> str | None:
    forms = ("value", *CONSTANT_FORMS)
    return None if node.attribute and node.attribute[0].name in forms else f"only {', '.join(forms)} constants"


def claims() -> list[OpClaim]:
    """Each converter's op, and Constant (folded into the values at conversion)."""
    return [OpClaim("Constant", limit=constant_limit),
            *(OpClaim(c.op_type, opsets=c.opsets, limit=typed(c)) for c in CONVERTERS.values())]


class CoremlPartition:
    """A saved `.mlpackage`, run by CoreML on macOS and by the MIL evaluator elsewhere; feeds and outputs are named
    as in ONNX."""

    def __init__(self, path: Path, inputs: dict[str, str], outputs: dict[str, str], dtypes: dict[str, str]) -> None:
        self.inputs, self.outputs, self.dtypes = inputs, outputs, dtypes
        if platform.system() == "Darwin":
            self.predict = coremltools().models.MLModel(str(path)).predict
        else:
            self.predict = MilEvaluator(load_program(path)).run

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        named = {self.inputs.get(name, name): np.asarray(value).reshape(np.shape(value) or (1,))
                 for name, value in feeds.items()}
        results = self.predict(named)
        return {name: np.asarray(results[feature]).astype(self.dtypes.get(name, "float32"), copy=False)
                for name, feature in self.outputs.items()}


def compile_partition(model: onnx.ModelProto, options: Options) -> CoremlPartition:
    with tempfile.TemporaryDirectory(prefix="edgepack-coreml-") as folder:
        path = Path(folder) / "partition.mlpackage"
        conversion = to_mlpackage(model, path, options)
        return CoremlPartition(path, conversion.inputs, conversion.outputs, conversion.dtypes)


def load_mlpackage(path: Path, options: Options) -> CoremlPartition:
    """A bundle's `.mlpackage`; the manifest entry's options map ONNX names to CoreML feature names and give the
    outputs' ONNX types."""
    names = options.get("features", {})
    return CoremlPartition(path, names.get("inputs", {}), names.get("outputs", {}), names.get("dtypes", {}))


PROVIDER = register(Provider("coreml", "CoreML ML Program built with coremltools' MIL builder (runs on macOS/iOS; "
                                       "evaluated with numpy elsewhere)",
                             Capability(claims()), compile_partition, load=load_mlpackage, missing=missing))
