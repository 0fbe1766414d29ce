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
    outputs by name for each feeds dict. A model of an IR version newer than 10 is read as 10, the newest
    onnxruntime 1.31 reads (a file of IR 10 or older is opened by path, with its external data)."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    if isinstance(model, onnx.ModelProto) and model.ir_version > 10:
        capped = onnx.ModelProto()
        capped.CopyFrom(model)
        capped.ir_version = 10
        model = capped
    if isinstance(model, Path) and onnx.load(model, load_external_data=False).ir_version <= 10:
        source: str | bytes = str(model)  # by path: onnxruntime finds its external data beside it
    else:
        source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else Path(model).read_bytes()
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, feeds)))


_last: list[tuple[onnx.ModelProto | Path, int, Run]] = []
"""The model last run (held, so that its id is not reused), its size, and its session."""


def run_onnxruntime(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs by name on one feeds dict (`onnxruntime_runner`). The session is kept while the same model (the same
    object at the same size, or an equal path) is run again: calibration runs one model on every sample."""
    size = model.ByteSize() if isinstance(model, onnx.ModelProto) else -1
    same = _last and size == _last[0][1] and (_last[0][0] is model if size >= 0 else _last[0][0] == Path(model))
    if not same:
        _last[:] = [(model if size >= 0 else Path(model), size, onnxruntime_runner(model))]
    return _last[0][2](feeds)
