"""onnxruntime as the independent executor that tests compare edgepack's output models with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

Run = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def onnxruntime_runner(model: onnx.ModelProto | Path) -> Run:
    """A session of onnxruntime with its own graph optimizations off (an independent executor), opened once:
    outputs by name for each feeds dict."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else Path(model).read_bytes()
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


def run_onnxruntime(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs by name on one feeds dict (`onnxruntime_runner`)."""
    return onnxruntime_runner(model)(feeds)
