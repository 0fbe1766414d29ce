"""The oracle checked by a second executor: where onnxruntime is installed, the source model's outputs on `reference`
are compared with onnxruntime's on the same inputs. When the two disagree (or `reference` cannot run the model),
onnxruntime's outputs become the oracle, and the first node where the two executors part is named, so that a bug in
one of them is found where it is, not in some bundle's fidelity."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from edgepack.targets.generic import onnxruntime_model

Feeds = dict[str, np.ndarray]
AGREEMENT = 1e-4
"""Two fp32 executors agree on an output when its max abs diff is at most this, relative to its scale (at least 1)."""


@dataclass(frozen=True)
class Disagreement:
    output: str
    relative_diff: float
    first_node: str | None
    """The first node, in graph order, whose output the two executors compute differently ('name' (Op))."""


def available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


def onnxruntime_run(model: onnx.ModelProto, outputs: list[str] | None = None,
                    weights: Path | None = None) -> Callable[[Feeds], Feeds]:
    """An onnxruntime session on `model` (its own optimizations off: an independent executor, not a fast one), one
    thread; `outputs` adds values of the main graph as outputs. External initializers (in `weights`) are fed from
    their mappings."""
    import onnxruntime

    copy, mapped = onnxruntime_model(model, weights)
    known = {o.name for o in copy.graph.output}
    copy.graph.output.extend(onnx.helper.make_empty_tensor_value_info(name) for name in outputs or []
                             if name not in known)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, {**feeds, **mapped})))


def relative_diff(expected: np.ndarray, actual: np.ndarray) -> float:
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape:
        return float("inf")
    if expected.dtype.kind not in "fciub" or expected.size == 0:
        return 0.0 if np.array_equal(expected, actual) else float("inf")
    a, b = expected.astype(np.float64), actual.astype(np.float64)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return float("inf")
    finite = np.isfinite(a)
    scale = max(1.0, float(np.max(np.abs(a[finite]), initial=0.0)))
    return float(np.max(np.abs(a[finite] - b[finite]), initial=0.0)) / scale


def disagreement(model: onnx.ModelProto, feeds: Feeds, reference: Feeds, runtime: Feeds) -> Disagreement | None:
    """None when the two executors' outputs agree; else the worst output and the first node that parts them."""
    worst = max(((name, relative_diff(value, runtime[name])) for name, value in reference.items()),
                key=lambda item: item[1], default=None)
    if worst is None or worst[1] <= AGREEMENT:
        return None
    return Disagreement(worst[0], worst[1], first_diverging_node(model, feeds))


def first_diverging_node(model: onnx.ModelProto, feeds: Feeds) -> str | None:
    """Every value of the main graph on both executors, compared in node order."""
    from onnx.reference import ReferenceEvaluator

    from edgepack.runtime.providers.reference import FIXES

    names = [name for node in model.graph.node for name in node.output if name]
    try:
        ours = ReferenceEvaluator(model, new_ops=FIXES).run(None, feeds, intermediate=True)
        theirs = onnxruntime_run(model, names)(feeds)
    except Exception:  # noqa: BLE001  (either executor may refuse to expose some value; then no node is named)
        return None
    for node in model.graph.node:
        for name in node.output:
            if name in ours and name in theirs and relative_diff(theirs[name], ours[name]) > AGREEMENT:
                return f"{node.name or '(unnamed)'!r} ({node.op_type})"
    return None
