"""Evaluates a MIL program with numpy: how a CoreML partition is checked on a machine without CoreML (Linux).

It runs the program as saved in the `.mlpackage` (read back with coremltools' MIL proto loader): the casts
coremltools inserted for float16 compute, the compressed weights (`constexpr_*` ops) and every op the converter
emitted. Each output is rounded to its MIL type, so a float16 program stores float16 values as CoreML does; the
arithmetic inside one op is float32 (as CoreML's GPU and Neural Engine accumulate), so results are close to, not
bit-equal with, a device's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .kernels import KERNELS
from .mil import coremltools, quiet

SKIPPED = frozenset({"const"})


def load_program(path: Path) -> Any:
    """The MIL program of a saved `.mlpackage`."""
    ct = coremltools()
    from coremltools.converters.mil.frontend.milproto.load import load

    with quiet():
        model = ct.models.MLModel(str(path), skip_model_load=True)
        spec = model.get_spec()
        return load(spec, spec.specificationVersion, model.weights_dir)


def unsupported_ops(program: Any) -> list[str]:
    """MIL op types of `program` that have no numpy kernel here."""
    function = program.functions["main"]
    return sorted({op.op_type for op in function.operations if op.op_type not in SKIPPED | KERNELS.keys()})


class MilEvaluator:
    def __init__(self, program: Any) -> None:
        self.function = program.functions["main"]
        missing = unsupported_ops(program)
        if missing:
            raise EdgepackError(f"the CoreML program uses MIL ops the Linux evaluator has no kernel for: "
                                f"{', '.join(missing)}", where="coreml provider",
                            fix="run it on macOS, or add kernels in runtime/providers/coreml/kernels/")
        self.input_names = list(self.function.inputs)
        self.output_names = [var.name for var in self.function.outputs]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        from coremltools.converters.mil.mil import types

        env: dict[str, Any] = {}
        for name, var in self.function.inputs.items():
            env[name] = np.asarray(feeds[name], dtype=types.nptype_from_builtin(var.dtype))
        for op in self.function.operations:
            if op.op_type in SKIPPED:
                continue
            args = {key: _argument(value, env) for key, value in op.inputs.items()}
            results = KERNELS[op.op_type](args)
            results = results if isinstance(results, tuple) else (results,)
            for var, result in zip(op.outputs, results):
                env[var.name] = _stored(result, var, types)
        return {name: np.asarray(_value(var, env)) for name, var in zip(self.output_names, self.function.outputs)}


def _value(var: Any, env: dict[str, Any]) -> Any:
    if var.name in env:
        return env[var.name]
    if var.val is not None:
        return var.val
    raise EdgepackError(f"MIL value {var.name!r} has no value", where="coreml evaluator")


def _argument(value: Any, env: dict[str, Any]) -> Any:
    """An op input as a kernel takes it: float16 arrays widened to float32, tuples as lists."""
    if isinstance(value, (tuple, list)):
        return [_argument(v, env) for v in value]
    result = _value(value, env)
    if isinstance(result, np.ndarray) and result.dtype == np.float16:
        return result.astype(np.float32)
    if isinstance(result, np.generic):
        return result.item()
    return result


def _stored(result: Any, var: Any, types: Any) -> np.ndarray:
    """The result rounded to the output's MIL element type."""
    return np.asarray(result).astype(types.nptype_from_builtin(var.dtype), copy=False)
