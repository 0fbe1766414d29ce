"""The slim pipeline: library passes first, then edgepack's own passes until the graph stops shrinking."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import onnx
import onnx_ir as ir

from edgepack.runtime.external_weights import mapped_initializers, weights_as_inputs

from .graphs import count_nodes
from .passes import PASSES

LIBRARY_PIPELINE = ("onnxscript-optimizer", "onnxslim")
OWN_PIPELINE = (
    "constant-to-initializer",
    "noop-elimination",
    "cse",
    "dedupe-initializers",
    "dead-code",
    "fold-conv-bn",
    "fold-conv-mul-add",
    "matmul-add-to-gemm",
)
MAX_ROUNDS = 4


@dataclass
class PassRecord:
    name: str
    removed: int = 0
    """Nodes removed over all the pass's runs (negative if it added nodes)."""
    runs: int = 0
    seconds: float = 0.0
    status: str = "ok"
    """`ok`, or `skipped` when the pass failed and the model before it was kept."""
    note: str = ""

    def as_manifest(self) -> dict[str, object]:
        """Deterministic fields only: bundles must be byte-identical across builds."""
        entry: dict[str, object] = {"name": self.name, "removed": self.removed, "runs": self.runs,
                                    "status": self.status}
        if self.note:
            entry["note"] = self.note
        return entry


def slim(model: onnx.ModelProto, on_pass: Callable[[str], None] | None = None, weights: Path | None = None
         ) -> tuple[onnx.ModelProto, list[PassRecord]]:
    """Slim `model`; outputs stay equal to the source's. A pass that fails is skipped, never fatal. The same model
    slimmed again in this process (another profile or precision of the same source) is taken from `SLIMMED`.
    `weights`: the folder of the data files of initializers the model keeps external; they stay external, mapped
    where a pass reads them, and the passes that would read them all into memory (onnxslim) are skipped."""
    key = _key(model, weights)
    if key in SLIMMED:
        SLIMMED.move_to_end(key)
        data, records = SLIMMED[key]
        return onnx.load_from_string(data), [replace(record, seconds=0.0) for record in records]
    slimmed, records = _slim(model, on_pass, weights)
    SLIMMED[key] = (slimmed.SerializeToString(), records)
    while len(SLIMMED) > CACHED_MODELS:
        SLIMMED.popitem(last=False)
    return slimmed, [replace(record) for record in records]


CACHED_MODELS = 4
SLIMMED: OrderedDict[str, tuple[bytes, list[PassRecord]]] = OrderedDict()
"""Slimmed models by `_key` of their input, most recently used last: the pipeline is deterministic, and slimming
PP-OCR rec takes 3 s of a 5 s generic build."""


def _key(model: onnx.ModelProto, weights: Path | None) -> str:
    """The model's bytes, its external data files (path, size, time) and the passes that would run on it (a replaced
    pass makes another key)."""
    digest = hashlib.sha256(model.SerializeToString(deterministic=True))
    digest.update(repr([(name, id(PASSES[name])) for name in (*LIBRARY_PIPELINE, *OWN_PIPELINE)]).encode())
    if weights is not None:
        for location in sorted({dict((e.key, e.value) for e in t.external_data)["location"]
                                for t in mapped_initializers(model)}):
            stat = (weights / location).stat()
            digest.update(repr((str(weights / location), stat.st_size, stat.st_mtime_ns)).encode())
    return digest.hexdigest()


READS_EVERY_WEIGHT = ("onnxslim",)
"""Library passes that read every weight into memory (onnxslim's graph copies each tensor's values), skipped for a
model whose weights stay external."""


def _slim(model: onnx.ModelProto, on_pass: Callable[[str], None] | None,
          weights: Path | None) -> tuple[onnx.ModelProto, list[PassRecord]]:
    records: dict[str, PassRecord] = {}
    current = model
    for name in LIBRARY_PIPELINE:
        if weights is not None and name in READS_EVERY_WEIGHT:
            records[name] = PassRecord(name, status="skipped", note="it reads every weight into memory, and this "
                                                                     "model's weights stay external")
            continue
        current = _run(name, current, records, on_pass, weights)
    for _ in range(MAX_ROUNDS):
        before = count_nodes(current)
        for name in OWN_PIPELINE:
            current = _run(name, current, records, on_pass, weights)
        if count_nodes(current) >= before:
            break
    return current, list(records.values())


def _run(name: str, model: onnx.ModelProto, records: dict[str, PassRecord],
         on_pass: Callable[[str], None] | None, weights: Path | None) -> onnx.ModelProto:
    if on_pass:
        on_pass(name)
    nodes_before = count_nodes(model)
    record = records.setdefault(name, PassRecord(name))
    record.runs += 1
    apply = PASSES[name].apply
    start = time.perf_counter()
    try:
        result = ir.to_proto(apply(_in_ir(model, weights)))
        onnx.checker.check_model(weights_as_inputs(result))
    except Exception as exc:  # a library pass may fail on a model; the model before it stays valid
        record.status = "skipped"
        record.note = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
        result = model
    record.seconds += time.perf_counter() - start
    record.removed += nodes_before - count_nodes(result)
    return result


def _in_ir(model: onnx.ModelProto, weights: Path | None) -> ir.Model:
    """The model in onnx_ir, its external tensors mapped from `weights` when a pass reads them."""
    converted = ir.from_proto(model)
    if weights is not None:
        for value in converted.graph.initializers.values():
            if isinstance(value.const_value, ir.ExternalTensor):
                value.const_value.base_dir = weights
    return converted
