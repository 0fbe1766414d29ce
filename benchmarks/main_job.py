"""The main job: build every sample model for every built-in profile (`build_all`, sharing slim and oracle work per
model), time each bundle on this host or its emulator beside onnxruntime on the source model, print one table of
model x profile (result, bytes, fidelity, latency, ratio to onnxruntime), write the report (report.html and
report.json, one section per model) and then benchmark the slimmer against its peers.

    python benchmarks/main_job.py [--out dist/demo] [--no-slim-bench] [sample ...]

Profiles whose target this version cannot build are reported as such, not skipped silently. Bundles are built in a
temporary folder; only the report is kept.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

import edgepack
from edgepack import samples
from edgepack.build_checks import target_available
from edgepack.packager.lower import FIXED_SHAPE_FORMS
from edgepack.portability import PortabilityReport, build_all, latency_line
from edgepack.portability_html import peer_ratio, render_many
from edgepack.profile import builtin_names
from edgepack.samples.atomic import write_bytes_atomically
from edgepack.targets import TARGETS


def fixed_shapes(profile: edgepack.Profile) -> bool:
    """Whether the profile's plans (and CoreML programs) are built for fixed input shapes: then every input is pinned
    to its sample's shape."""
    target = TARGETS[profile.target]
    return any(target.forms.get(provider) in FIXED_SHAPE_FORMS for provider in profile.providers)


class StatusReporter:
    """Shows the stage running now (model, profile, stage) on one status line, and prints each finished profile."""

    def __init__(self, console: Console, model: str) -> None:
        self.console, self.model = console, model
        self.status = console.status("")
        self.stage = ""

    def __enter__(self) -> StatusReporter:
        self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.status.stop()

    def start(self, stage: str, detail: str = "") -> None:
        self.stage = stage
        self.status.update(escape(f"{self.model}: {stage} {detail}"))

    def update(self, detail: str) -> None:
        self.status.update(escape(f"{self.model}: {self.stage} {detail}"))

    def finish(self, stage: str, seconds: float, summary: str) -> None:
        if stage.endswith(": time"):
            self.console.print(escape(f"  {self.model}: {stage} {seconds:5.1f} s  {summary}"), highlight=False)

    def fail(self, stage: str) -> None:
        self.console.print(escape(f"  {self.model}: {stage} failed"), style="red")


def build_model(name: str, profiles: list[str], out: Path, console: Console) -> PortabilityReport:
    """`name` built for `profiles`: the fixed-shape ones pinned to the sample's shapes, the others with the
    catalog's dynamic shapes, each group sharing its slim work; the outcomes in `profiles`' order."""
    feeds = samples.feeds(name)
    pinned = {key: value.shape for key, value in feeds.items()}
    groups = {True: [p for p in profiles if fixed_shapes(edgepack.load_profile(p))]}
    groups[False] = [p for p in profiles if p not in groups[True]]
    reports = []
    with StatusReporter(console, name) as reporter:
        for fixed, group in groups.items():
            if group:  # onnxruntime is timed once, with the first group: both groups run the same feeds
                reports.append(build_all(samples.path(name), group, out / name / ("fixed" if fixed else "dynamic"),
                                         reporter=reporter, peer=not reports, sample_inputs=[feeds],
                                         input_shapes=pinned if fixed else samples.SAMPLES[name].shapes))
    outcomes = sorted((o for r in reports for o in r.outcomes), key=lambda o: profiles.index(o.profile))
    return PortabilityReport(str(samples.path(name)), outcomes, next((r.peer for r in reports if r.peer), None))


def table(reports: dict[str, PortabilityReport], unavailable: dict[str, str]) -> Table:
    out = Table(title="edgepack: every sample model for every built-in profile, timed on this host",
                title_justify="left")
    for column in ("model", "profile", "result", "bundle bytes", "cosine", "p50 ms", "where timed",
                   "onnxruntime p50 ms", "vs onnxruntime"):
        out.add_column(column, justify="left" if column in ("model", "profile", "result", "where timed") else "right")
    for name, report in reports.items():
        peer = report.peer.as_dict() if report.peer else None
        peer_ms = f"{peer['p50_ms']:.3g}" if peer and peer["p50_ms"] else ""
        for outcome in report.outcomes:
            result = ("[green]ok[/]" if outcome.passed else "[red]below tolerance[/]" if outcome.built
                      else f"[red]failed: {escape((outcome.error or '')[:80])}[/]")
            latency = outcome.latency.as_dict() if outcome.latency else None
            timed = latency and latency["p50_ms"] is not None
            where = ("" if not latency else short_engine(latency["engine"]) if timed else "not timed")
            out.add_row(name, outcome.profile, result,
                        f"{outcome.bytes['bundle']:,}" if outcome.bytes else "",
                        f"{outcome.fidelity['cosine']:.5f}" if outcome.fidelity else "",
                        f"{latency['p50_ms']:.3g}" if timed else "", escape(where), peer_ms,
                        peer_ratio(latency, peer))
    for profile, reason in unavailable.items():
        out.add_row("(all)", profile, f"[yellow]not available: {escape(reason)}[/]", *[""] * 6)
    return out


def short_engine(engine: str) -> str:
    """Where a bundle was timed, in a few words: `cpu provider (C core)`, `OpenVINO`, `Chromium, wasm`,
    `qemu-aarch64 (emulated)`."""
    if "emulated" in engine:
        return "qemu-aarch64 (emulated)"
    if "Chromium" in engine:
        return "Chromium, " + engine.rsplit(", ", 1)[-1]
    return engine.removeprefix("this host, ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="dist/demo", help="folder for report.html and report.json")
    parser.add_argument("--no-slim-bench", action="store_true", help="leave out the slimmer's benchmark")
    parser.add_argument("models", nargs="*", help="sample models (default: all)")
    args = parser.parse_args()
    console = Console(width=170)
    unavailable, profiles = {}, []
    for name in builtin_names():
        reason = target_available(edgepack.load_profile(name))
        if reason:
            unavailable[name] = reason
        else:
            profiles.append(name)
    models = args.models or samples.names()
    reports = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="edgepack-demo-") as tmp:
        for index, name in enumerate(models, 1):
            console.print(f"[bold]{index}/{len(models)} {escape(name)}[/]: building for {', '.join(profiles)}")
            reports[name] = build_model(name, profiles, Path(tmp), console)
    console.print(table(reports, unavailable))
    for name, report in reports.items():
        if report.peer:
            console.print(escape(f"onnxruntime, {name}: {latency_line(report.peer)}"), highlight=False)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = [report.as_dict() for report in reports.values()]
    write_bytes_atomically(out / "report.json", (json.dumps({"reports": data}, indent=2) + "\n").encode())
    write_bytes_atomically(out / "report.html", render_many(data, unavailable).encode())
    cells = [o for r in reports.values() for o in r.outcomes]
    failed = [o for o in cells if not o.passed]
    console.print(f"{len(cells) - len(failed)} of {len(cells)} builds ok in {time.perf_counter() - start:.0f} s; "
                  f"report: {escape(str(out / 'report.html'))}")
    code = 0
    if not args.no_slim_bench:
        code = subprocess.call([sys.executable, str(Path(__file__).with_name("slim_vs_peers.py")), "--repeat", "3"])
    return 1 if failed or code else 0


if __name__ == "__main__":
    sys.exit(main())
