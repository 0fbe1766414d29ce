"""The generic target: the slimmed model as one plain ONNX partition, runnable by any ONNX runtime."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from edgepack.packager.graphs import count_nodes
from edgepack.runtime.external_weights import mapped_initializers, mapped_weights, weights_as_inputs, write_weights

from . import LOWERED_COMPUTE, WEIGHT_ONLY, BundleInput, Run, ShippedRuntime, register

ARTIFACT = "model.onnx"
WEIGHTS = "model.onnx.data"
"""The data file of a model whose weights stay external (over protobuf's 2 GB, or exported so)."""


def onnxruntime_session_config(model: onnx.ModelProto) -> dict[str, str]:
    """onnxruntime session settings a bundle needs to run at full speed. With int weights read by float compute
    (DequantizeLinear without static QDQ's QuantizeLinear: weight-only or dynamic int8) onnxruntime keeps each
    DequantizeLinear and runs it on every call unless QDQ handling is off, which lets it fold them into float
    weights at load (1.6x faster on PP-OCR cls); dynamic int8 MatMuls are fused either way."""
    ops = {node.op_type for node in model.graph.node}
    if "DequantizeLinear" in ops and "QuantizeLinear" not in ops:
        return {"session.disable_quant_qdq": "1"}
    return {}


def onnxruntime_session(model: bytes, optimized: Path | None = None) -> Any:
    """A 1-thread onnxruntime CPU session (ORT_ENABLE_ALL) of a serialized model (IR 10 at most, as onnxruntime
    1.31 reads), with the settings `onnxruntime_session_config` gives it; `optimized` saves the graph it runs.
    onnxruntime is a benchmark and tuning dependency, imported here only."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    for key, value in onnxruntime_session_config(onnx.load_from_string(model)).items():
        options.add_session_config_entry(key, value)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if optimized is not None:
        options.optimized_model_filepath = str(optimized)
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def onnxruntime_model(model: onnx.ModelProto, weights: Path | None) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """A copy of `model` as onnxruntime 1.31 reads it (IR 10 at most), its external initializers made inputs, and
    their mappings (from `weights`) to feed them, so that onnxruntime holds no copy of them."""
    copy = onnx.ModelProto()
    copy.CopyFrom(weights_as_inputs(model))
    copy.ir_version = min(copy.ir_version, 10)
    return copy, mapped_weights(model, weights) if weights is not None else {}


def onnxruntime_run(model: onnx.ModelProto, weights: Path | None = None) -> Run:
    """`model` on an `onnxruntime_session` (`onnxruntime_model`: IR capped, external weights fed), outputs by
    name."""
    copy, mapped = onnxruntime_model(model, weights)
    session = onnxruntime_session(copy.SerializeToString())
    names = [o.name for o in session.get_outputs()]
    return lambda feeds: dict(zip(names, session.run(names, {**feeds, **mapped})))


def open_on_onnxruntime(bundle: Path) -> tuple[str, Callable[[], Run]] | None:
    """The bundle's model on onnxruntime as an app runs it (`onnxruntime_session`), or None where onnxruntime is not
    installed. Its fused int8 kernels use this CPU's own instructions, which the reference provider's exact QDQ
    arithmetic cannot show (8-bit weights saturated them on an x86 CPU without VNNI)."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None

    return (f"onnxruntime {ort.__version__}",
            lambda: onnxruntime_run(onnx.load(bundle / ARTIFACT, load_external_data=False), bundle))


ONNXRUNTIME = ShippedRuntime("onnxruntime", lambda: importlib.util.find_spec("onnxruntime") is not None,
                             onnxruntime_run, open_on_onnxruntime)


@register("generic", "slimmed ONNX model and manifest", precisions=WEIGHT_ONLY | LOWERED_COMPUTE, runtime=ONNXRUNTIME,
          product="the generic bundle", maps_weights=True)
def write(bundle: BundleInput, staging: Path) -> list[dict[str, Any]]:
    model = bundle.model
    if bundle.weights is not None and mapped_initializers(model):
        model = onnx.ModelProto()
        model.CopyFrom(bundle.model)
        write_weights(model, bundle.weights, staging, WEIGHTS)
    (staging / ARTIFACT).write_bytes(model.SerializeToString(deterministic=True))
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    partition: dict[str, Any] = {
        "id": "p0",
        "provider": "onnx",
        "artifact": ARTIFACT,
        "inputs": [i.name for i in graph.input if i.name not in initializers],
        "outputs": [o.name for o in graph.output],
        "nodes": count_nodes(bundle.model),
        "ops": sorted({node.op_type for node in graph.node}),
    }
    if config := onnxruntime_session_config(model):
        partition["onnxruntime_session_config"] = config
    return [partition]
