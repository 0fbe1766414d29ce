"""Build progress and the build report: what each stage did and how long it took."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from edgepack.packager.slim import PassRecord


class Reporter(Protocol):
    """Receives progress while a build runs (the CLI shows it with rich; the API default ignores it)."""

    def start(self, stage: str, detail: str = "") -> None: ...

    def update(self, detail: str) -> None: ...

    def finish(self, stage: str, seconds: float, summary: str) -> None: ...

    def fail(self, stage: str) -> None: ...


class SilentReporter:
    def start(self, stage: str, detail: str = "") -> None:
        pass

    def update(self, detail: str) -> None:
        pass

    def finish(self, stage: str, seconds: float, summary: str) -> None:
        pass

    def fail(self, stage: str) -> None:
        pass


@dataclass
class StageRecord:
    name: str
    seconds: float
    summary: str


@dataclass
class BuildReport:
    model: str
    profile: str
    target: str
    bundle_dir: str
    source_nodes: int = 0
    slim_nodes: int = 0
    source_bytes: int = 0
    bundle_bytes: int = 0
    stages: list[StageRecord] = field(default_factory=list)
    passes: list[PassRecord] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)
    placement: list[dict[str, Any]] = field(default_factory=list)
    """Per partition: its provider, nodes and estimated operations (`packager.flops`)."""
    source_ops: list[str] = field(default_factory=list)
    decomposed: list[str] = field(default_factory=list)
    """Contrib ops rewritten into standard ONNX at load (`packager.contrib`)."""
    fidelity: dict[str, Any] | None = None
    per_node: dict[str, Any] | None = None
    """With --per-node: the first value that drifts from the fp32 source, and the worst ones (`sdk/per_node.py`)."""
    warnings: list[str] = field(default_factory=list)
    """What the build let through but the user should know (weights that hold NaN or Inf)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "profile": self.profile,
            "target": self.target,
            "bundle_dir": self.bundle_dir,
            "nodes": {"source": self.source_nodes, "slim": self.slim_nodes},
            "bytes": {"source": self.source_bytes, "bundle": self.bundle_bytes},
            "stages": [{"name": s.name, "seconds": round(s.seconds, 4), "summary": s.summary} for s in self.stages],
            "passes": [{**p.as_manifest(), "seconds": round(p.seconds, 4)} for p in self.passes],
            "partitions": self.partitions,
            "placement": self.placement,
            "source_ops": self.source_ops,
            "decomposed": self.decomposed,
            "fidelity": self.fidelity,
            "per_node": self.per_node,
            "warnings": self.warnings,
        }
