"""The slim pipeline: library passes first, then edgepack's own passes until the graph stops shrinking."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

import onnx
import onnx_ir as ir

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


def slim(model: onnx.ModelProto, on_pass: Callable[[str], None] | None = None
         ) -> tuple[onnx.ModelProto, list[PassRecord]]:
    """Slim `model`; outputs stay equal to the source's. A pass that fails is skipped, never fatal. The same model
    slimmed again in this process (another profile or precision of the same source) is taken from `SLIMMED`."""
    key = _key(model)
    if key in SLIMMED:
        SLIMMED.move_to_end(key)
        data, records = SLIMMED[key]
        return onnx.load_from_string(data), [replace(record, seconds=0.0) for record in records]
    slimmed, records = _slim(model, on_pass)
    SLIMMED[key] = (slimmed.SerializeToString(), records)
    while len(SLIMMED) > CACHED_MODELS:
        SLIMMED.popitem(last=False)
    return slimmed, [replace(record) for record in records]


CACHED_MODELS = 4
SLIMMED: OrderedDict[str, tuple[bytes, list[PassRecord]]] = OrderedDict()
"""Slimmed models by `_key` of their input, most recently used last: the pipeline is deterministic, and slimming
PP-OCR rec takes 3 s of a 5 s generic build."""


def _key(model: onnx.ModelProto) -> str:
    """The model's bytes and the passes that would run on it (a replaced pass makes another key)."""
    digest = hashlib.sha256(model.SerializeToString(deterministic=True))
    digest.update(repr([(name, id(PASSES[name])) for name in (*LIBRARY_PIPELINE, *OWN_PIPELINE)]).encode())
    return digest.hexdigest()


def _slim(model: onnx.ModelProto, on_pass: Callable[[str], None] | None) -> tuple[onnx.ModelProto, list[PassRecord]]:
    records: dict[str, PassRecord] = {}
    current = model
    for name in LIBRARY_PIPELINE:
        current = _run(name, current, records, on_pass)
    for _ in range(MAX_ROUNDS):
        before = count_nodes(current)
        for name in OWN_PIPELINE:
            current = _run(name, current, records, on_pass)
        if count_nodes(current) >= before:
            break
    return current, list(records.values())


def _run(name: str, model: onnx.ModelProto, records: dict[str, PassRecord],
         on_pass: Callable[[str], None] | None) -> onnx.ModelProto:
    if on_pass:
        on_pass(name)
    nodes_before = count_nodes(model)
    record = records.setdefault(name, PassRecord(name))
    record.runs += 1
    apply = PASSES[name].apply
    start = time.perf_counter()
    try:
        result = ir.to_proto(apply(ir.from_proto(model)))
        onnx.checker.check_model(result)
    except Exception as exc:  # a library pass may fail on a model; the model before it stays valid
        record.status = "skipped"
        record.note = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
        result = model
    record.seconds += time.perf_counter() - start
    record.removed += nodes_before - count_nodes(result)
    return result
