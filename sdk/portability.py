"""`edgepack build M --profile all`: one model built for several profiles in one run, sharing slim and oracle work,
and the portability report of the result: per profile whether it built, where its nodes and FLOPs run, its fidelity,
bytes, latency on this host and what the conversion changed. The portability score is the share of the profiles
asked for that built and met their fidelity."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.model_file import resolve_model_path
from edgepack.samples.atomic import write_bytes_atomically

from .build import BuildResult, build
from .bundle_writer import check_output_folder
from .host_latency import Latency, host_latency, peer_latency
from .profile import load_profile
from .report import Reporter, SilentReporter
from .shared_work import SharedWork

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"
FORMAT_VERSION = 1


@dataclass
class ProfileOutcome:
    profile: str
    target: str
    built: bool
    seconds: float
    error: str | None = None
    bundle: str | None = None
    passed: bool = False
    """Built and within the profile's fidelity."""
    placement: list[dict[str, Any]] = field(default_factory=list)
    fidelity: dict[str, Any] | None = None
    bytes: dict[str, int] = field(default_factory=dict)
    latency: Latency | None = None
    lost: list[str] = field(default_factory=list)
    """What the conversion changed: precision lowered, ops rewritten, nodes on a fallback, a runtime's refusal."""

    def as_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "target": self.target, "built": self.built, "passed": self.passed,
                "seconds": round(self.seconds, 3), "error": self.error, "bundle": self.bundle,
                "placement": self.placement, "fidelity": self.fidelity, "bytes": self.bytes,
                "latency": self.latency.as_dict() if self.latency else None, "lost": self.lost}


@dataclass
class PortabilityReport:
    model: str
    outcomes: list[ProfileOutcome]
    peer: Latency | None = None
    """onnxruntime on the source model on this host, on the same inputs as the bundles' timings."""

    @property
    def score(self) -> float:
        """The share of the profiles asked for that built and met their fidelity."""
        return sum(o.passed for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"format_version": FORMAT_VERSION, "model": self.model, "score": round(self.score, 4),
                "peer": self.peer.as_dict() if self.peer else None,
                "profiles": [o.as_dict() for o in self.outcomes]}


class ProfileReporter:
    """Forwards one profile's build progress to a shared reporter, each stage named after its profile."""

    def __init__(self, inner: Reporter, profile: str) -> None:
        self.inner, self.profile = inner, profile

    def start(self, stage: str, detail: str = "") -> None:
        self.inner.start(f"{self.profile}: {stage}", detail)

    def update(self, detail: str) -> None:
        self.inner.update(detail)

    def finish(self, stage: str, seconds: float, summary: str) -> None:
        self.inner.finish(f"{self.profile}: {stage}", seconds, summary)

    def fail(self, stage: str) -> None:
        self.inner.fail(f"{self.profile}: {stage}")


def build_all(model: str | Path, profiles: Sequence[str], output_dir: str | Path = "dist",
              reporter: Reporter | None = None, latency: bool = True, peer: bool = True, **options: Any
              ) -> PortabilityReport:
    """Build `model` for each of `profiles` into `output_dir` (a failing profile stops none), time each bundle on this
    host unless `latency` is False, and onnxruntime on the source beside them unless `peer` is False too, and write
    `report.json` and `report.html` there. `options` are `build`'s."""
    check_output_folder(Path(output_dir))
    progress = reporter or SilentReporter()
    shared = SharedWork()
    outcomes, sample = [], None
    for name in profiles:
        start = time.perf_counter()
        target = _target_of(name)
        try:
            result = build(model, name, output_dir, reporter=ProfileReporter(progress, name), shared=shared,
                           **options)
        except EdgepackError as error:
            outcomes.append(ProfileOutcome(name, target, False, time.perf_counter() - start, error=error.paragraph()))
            continue
        outcome = _outcome(name, result, time.perf_counter() - start)
        if latency:
            progress.start(f"{name}: time", "on this host")
            timed = time.perf_counter()
            outcome.latency = host_latency(result.report.target, result.bundle_dir, Path(model), result.sample)
            progress.finish(f"{name}: time", time.perf_counter() - timed, latency_line(outcome.latency))
            sample = sample or result.sample
        outcomes.append(outcome)
    report = PortabilityReport(str(model), outcomes)
    if sample is not None and peer:
        progress.start("peer: time", "onnxruntime on the source model")
        timed = time.perf_counter()
        report.peer = peer_latency(resolve_model_path(model), sample)
        progress.finish("peer: time", time.perf_counter() - timed, latency_line(report.peer))
    write_report(report, Path(output_dir))
    return report


def _target_of(profile: str) -> str:
    try:
        return load_profile(profile).target
    except EdgepackError:
        return "?"


def _outcome(profile: str, result: BuildResult, seconds: float) -> ProfileOutcome:
    report = result.report
    fidelity = report.fidelity
    model_bytes = _artefact_bytes(result.bundle_dir, report.partitions)
    return ProfileOutcome(profile, report.target, True, seconds, bundle=str(result.bundle_dir),
                          passed=fidelity is None or bool(fidelity["passed"]), placement=_shares(report.placement),
                          fidelity=_worst(fidelity) if fidelity else None,
                          bytes={"bundle": report.bundle_bytes, "model": model_bytes,
                                 "runtime": report.bundle_bytes - model_bytes},
                          lost=_lost(result))


def _shares(placement: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per provider: nodes and estimated FLOPs, and their shares of the whole (FLOP shares only where every node's
    shapes were known)."""
    by_provider: dict[str, dict[str, Any]] = {}
    for part in placement:
        row = by_provider.setdefault(part["provider"], {"provider": part["provider"], "nodes": 0, "flops": 0,
                                                        "flops_unknown_nodes": 0})
        for key in ("nodes", "flops", "flops_unknown_nodes"):
            row[key] += part[key]
    nodes = sum(r["nodes"] for r in by_provider.values()) or 1
    flops = sum(r["flops"] for r in by_provider.values())
    known = not any(r["flops_unknown_nodes"] for r in by_provider.values()) and flops > 0
    for row in by_provider.values():
        row["node_share"] = round(row["nodes"] / nodes, 4)
        row["flop_share"] = round(row["flops"] / flops, 4) if known else None
    return list(by_provider.values())


def _worst(fidelity: dict[str, Any]) -> dict[str, Any]:
    """The worst cosine, max abs diff and top-1 agreement over the outputs, with the samples they were measured on."""
    outputs = fidelity["outputs"].values()
    top1 = [m["top1_agreement"] for m in outputs if m["top1_agreement"] is not None]
    worst = {"cosine": min(m["cosine"] for m in outputs), "max_abs_diff": max(m["max_abs_diff"] for m in outputs),
             "top1_agreement": min(top1) if top1 else None, "samples": fidelity["samples"],
             "inputs": fidelity["inputs"], "tolerance": fidelity["tolerance"], "passed": fidelity["passed"]}
    for key in ("oracle", "emulation"):
        worst[key] = fidelity.get(key)
    if "runtime" in fidelity:
        worst["runtime"] = {k: v for k, v in fidelity["runtime"].items() if k != "outputs"}
    return worst


def _artefact_bytes(folder: Path, partitions: list[dict[str, Any]]) -> int:
    """Bytes of the model itself: each partition's artefact (a file, an IR's .xml and .bin, or a package folder)."""
    total = 0
    for part in partitions:
        for name in (part["artifact"], part.get("onnx")):
            path = folder / name if name else None
            if path is None or not path.exists():
                continue
            files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
            if path.suffix == ".xml" and path.with_suffix(".bin").is_file():
                files.append(path.with_suffix(".bin"))
            total += sum(p.stat().st_size for p in files)
    return total


def _lost(result: BuildResult) -> list[str]:
    report = result.report
    lost = []
    stages = {s.name: s.summary for s in report.stages}
    if report.decomposed:
        lost.append(f"ops rewritten at load: {', '.join(report.decomposed)}")
    quantized = stages.get("quantize", "")
    if quantized and not quantized.startswith("fp32"):
        lost.append(f"precision: {quantized}")
    if "mixed precision" in stages:
        lost.append(f"mixed precision: {stages['mixed precision']}")
    if "full precision" in stages:
        lost.append(f"precision raised for fidelity: {stages['full precision']}")
    kept_ops = {op for part in report.partitions for op in part.get("ops", [])}
    rewritten = sorted(set(report.source_ops) - kept_ops)
    if rewritten:
        lost.append(f"ops rewritten by slimming or lowering: {', '.join(rewritten)}")
    providers = load_profile(report.profile).providers
    if len(providers) > 1:
        fallback = [p for p in report.placement if p["provider"] == providers[-1]]
        if fallback:
            nodes = sum(p["nodes"] for p in fallback)
            lost.append(f"fallback: {nodes} of {sum(p['nodes'] for p in report.placement)} nodes on {providers[-1]}")
    refused = (report.fidelity or {}).get("runtime", {}).get("refused")
    if refused:
        lost.append(f"{report.fidelity['runtime']['name']} refuses the bundle: {refused}")
    return lost


def latency_line(latency: Latency) -> str:
    if latency.p50_ms is None:
        return f"not timed: {latency.not_timed}"
    return f"p50 {latency.p50_ms:.3g} ms over {latency.runs} runs, {latency.engine}"


def write_report(report: PortabilityReport, folder: Path) -> tuple[Path, Path]:
    """`report.json` and the self-contained `report.html`, each written whole or not at all."""
    from .portability_html import render

    data = report.as_dict()
    json_path, html_path = folder / REPORT_JSON, folder / REPORT_HTML
    write_bytes_atomically(json_path, (json.dumps(data, indent=2) + "\n").encode())
    write_bytes_atomically(html_path, render(data).encode())
    return json_path, html_path
