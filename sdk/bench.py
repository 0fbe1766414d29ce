"""`edgepack bench`: load time, first run, latency percentiles, throughput and peak memory of a model or bundle on
edgepack's runtime, optionally beside onnxruntime running the source model in the same process."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape
from rich.table import Table

from edgepack.runtime.errors import EdgepackError

from .bench_result import thread_count
from .input_files import check_names
from .peak_rss import PeakRSS
from .sample_inputs import dims_of, sample_feeds
from .source_model import peer_model_path

PEERS = ("onnxruntime",)
NOTE = "Timings on a shared machine are noisy: compare the ratios, not the absolute figures."

Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class EngineFigures:
    engine: str
    providers: list[str]
    load_ms: float
    """Session construction (edgepack.runtime.Session, onnxruntime.InferenceSession)."""
    first_run_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    runs_per_s: float
    """1000 / p50_ms."""
    peak_rss_mb: float
    """The process's peak resident memory over this engine's load and runs."""
    start_rss_mb: float
    """Resident memory before the load (with ru_maxrss: the process's peak so far)."""


@dataclass(frozen=True)
class BenchReport:
    model: str
    peer_model: str | None
    """The .onnx the peer ran (the source model of a bundle)."""
    runs: int
    warmup: int
    threads: int
    inputs: list[dict[str, Any]]
    """name, dtype, shape and `from` ("file" or "generated") of each input."""
    engines: list[EngineFigures]
    rss_method: str
    """"VmHWM" (reset per engine) or "ru_maxrss" (the process's peak so far)."""
    max_abs_diff: float | None
    """Largest difference between the engines' first-run outputs (outputs of the same name and shape)."""

    def engine(self, name: str) -> EngineFigures:
        return next(e for e in self.engines if e.engine == name)

    @property
    def ratios(self) -> dict[str, float] | None:
        """edgepack / peer, for the median latency and the load time."""
        if len(self.engines) < 2:
            return None
        ours, peer = self.engines
        return {"p50": ours.p50_ms / peer.p50_ms, "load": ours.load_ms / peer.load_ms}

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "peer_model": self.peer_model, "runs": self.runs, "warmup": self.warmup,
                "threads": self.threads, "inputs": self.inputs,
                "engines": {e.engine: asdict(e) for e in self.engines}, "ratios": self.ratios,
                "rss_method": self.rss_method, "max_abs_diff": self.max_abs_diff, "note": NOTE}


@dataclass
class _Engine:
    run: Callable[[Feeds], Feeds]
    providers: list[str]
    inputs: list[Any]


def bench(model: str | Path, provider: str | None = None, runs: int = 50, warmup: int = 5, threads: int = 1,
          compare: str | None = None, source: str | Path | None = None, feeds: Mapping[str, np.ndarray] | None = None,
          dims: Mapping[str, int] | None = None, seed: int = 0) -> BenchReport:
    """Benchmark `model` (an .onnx file or a bundle folder) on edgepack's runtime and, with
    `compare="onnxruntime"`, onnxruntime on the source model (`source`; a plain .onnx is its own source).

    Each engine: load, one first run, `warmup` untimed runs, `runs` timed runs, back to back in this process.
    `feeds` are used as given; inputs missing from them are generated (`sample_feeds`, with `seed` and `dims`).
    `threads` goes to the cpu core (its thread pool), OpenVINO (`INFERENCE_NUM_THREADS`) and onnxruntime (intra-op
    threads)."""
    if runs < 1 or warmup < 0 or threads < 1:
        raise EdgepackError(f"bad counts: runs {runs}, warmup {warmup}, threads {threads}",
                            fix="use --runs 1 or more, --warmup 0 or more and --threads 1 or more")
    peer_model = None
    if compare is not None:
        if compare not in PEERS:
            raise EdgepackError(f"cannot compare with {compare!r}", fix=f"compare with one of: {', '.join(PEERS)}")
        import_onnxruntime()
        peer_model = peer_model_path(Path(model), source)
    elif source is not None:
        raise EdgepackError("--source is only used with --compare onnxruntime",
                            fix="add --compare onnxruntime, or leave --source out")
    given = dict(feeds or {})
    chosen: Feeds = {}

    def edgepack_feeds(engine: _Engine) -> Feeds:
        check_names(given, [s.name for s in engine.inputs], require_all=False)
        generated = sample_feeds([s for s in engine.inputs if s.name not in given], seed,
                                 {**dims_of(engine.inputs, given), **(dims or {})})
        chosen.update({s.name: given[s.name] if s.name in given else generated[s.name] for s in engine.inputs})
        return chosen

    figures, first, rss_method = _measure("edgepack", lambda: _load_edgepack(model, provider, threads), edgepack_feeds,
                              runs, warmup)
    engines, max_diff = [figures], None
    if peer_model is not None:
        figures, peer_first, rss_method = _measure("onnxruntime", lambda: onnxruntime_engine(peer_model, threads),
                                       lambda engine: _peer_feeds(engine, chosen), runs, warmup)
        engines.append(figures)
        max_diff = _max_abs_diff(first, peer_first)
    inputs = [{"name": name, "dtype": value.dtype.name, "shape": list(value.shape),
               "from": "file" if name in given else "generated"} for name, value in chosen.items()]
    return BenchReport(str(model), str(peer_model) if peer_model else None, runs, warmup, threads, inputs, engines,
                       rss_method, max_diff)


def onnxruntime_figures(source: Path, feeds: Mapping[str, np.ndarray], runs: int, warmup: int = 1,
                        threads: int = 1) -> EngineFigures:
    """onnxruntime (all graph optimizations, `threads` intra-op threads) on the .onnx `source` with `feeds`."""
    figures, _, _ = _measure("onnxruntime", lambda: onnxruntime_engine(source, threads),
                             lambda engine: _peer_feeds(engine, dict(feeds)), runs, warmup)
    return figures


def _measure(name: str, load: Callable[[], _Engine], feeds_for: Callable[[_Engine], Feeds], runs: int,
             warmup: int) -> tuple[EngineFigures, Feeds, str]:
    gc.collect()
    with PeakRSS() as rss:
        start = time.perf_counter()
        engine = load()
        load_s = time.perf_counter() - start
        feeds = feeds_for(engine)
        start = time.perf_counter()
        first = engine.run(feeds)
        first_s = time.perf_counter() - start
        for _ in range(warmup):
            engine.run(feeds)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            engine.run(feeds)
            times.append(time.perf_counter() - start)
    providers = engine.providers
    del engine
    gc.collect()
    p50, p90, p99 = (float(v) * 1000 for v in np.percentile(times, [50, 90, 99]))
    return EngineFigures(name, providers, load_s * 1000, first_s * 1000, p50, p90, p99, 1000 / p50, rss.peak_mb,
                         rss.start_mb), first, rss.method


def _load_edgepack(model: str | Path, provider: str | None, threads: int) -> _Engine:
    """The model on `provider`, or on its own placement, where a partition placed on the NumPy `reference` runs on
    the `cpu` C core instead when that takes the whole model (a generic bundle, a plain .onnx): `reference` is the
    oracle, not a runtime to time."""
    from edgepack.runtime import Session

    if provider is None:
        session = Session(model, threads=threads)
        if any(p.provider == "reference" for p in session.partitions):
            try:
                session = Session(model, providers=["cpu"], threads=threads)
            except EdgepackError:
                pass
    else:
        session = Session(model, providers=[provider], threads=threads)
    return _Engine(session.run, list(dict.fromkeys(p.provider for p in session.partitions)), session.inputs)


def import_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise EdgepackError("--compare onnxruntime needs the onnxruntime package, which is not installed",
                            fix="pip install onnxruntime") from None
    return onnxruntime


def onnxruntime_engine(path: Path, threads: int) -> _Engine:
    ort = import_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own error types
        raise _peer_error("load", path, exc) from None
    names = [o.name for o in session.get_outputs()]

    def run(feeds: Feeds) -> Feeds:
        try:
            return dict(zip(names, session.run(names, feeds)))
        except Exception as exc:
            raise _peer_error("run", path, exc) from None

    return _Engine(run, session.get_providers(), session.get_inputs())


def _peer_error(step: str, path: Path, exc: Exception) -> EdgepackError:
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return EdgepackError(f"onnxruntime could not {step} {path.name}: {first_line}", where=str(path),
                         fix="bench without --compare, or check the model with onnxruntime alone")


def _peer_feeds(engine: _Engine, feeds: Feeds) -> Feeds:
    names = [i.name for i in engine.inputs]
    missing = [n for n in names if n not in feeds]
    if missing:
        raise EdgepackError(f"the source model has inputs the benchmarked model has not: {', '.join(missing)}",
                            fix="pass the source model the bundle was built from with --source")
    return {n: feeds[n] for n in names}


def _max_abs_diff(ours: Feeds, peer: Feeds) -> float | None:
    diffs = [float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(peer[k], np.float64))))
             for k, a in ours.items()
             if k in peer and np.shape(a) == np.shape(peer[k]) and np.size(a)
             and np.asarray(a).dtype.kind in "biuf" and np.asarray(peer[k]).dtype.kind in "biuf"]
    return max(diffs) if diffs else None


def table(report: BenchReport) -> Table:
    """One column per engine, one row per figure, and the edgepack / peer ratios."""
    out = Table(title=f"bench {escape(Path(report.model).name)}: {report.runs} runs, {report.warmup} warm-up, "
                f"{thread_count(report.threads)}", title_justify="left")
    out.add_column("")
    for e in report.engines:
        out.add_column(e.engine, justify="right")
    ratios = report.ratios
    if ratios is not None:
        out.add_column(f"{report.engines[0].engine} / {report.engines[1].engine}", justify="right")
    rows: list[tuple[str, Callable[[EngineFigures], str], str | None]] = [
        ("providers", lambda e: escape(", ".join(p.removesuffix("ExecutionProvider") for p in e.providers)), None),
        ("load ms", lambda e: f"{e.load_ms:.1f}", "load"),
        ("first run ms", lambda e: f"{e.first_run_ms:.2f}", None),
        ("p50 ms", lambda e: f"{e.p50_ms:.3f}", "p50"),
        ("p90 ms", lambda e: f"{e.p90_ms:.3f}", None),
        ("p99 ms", lambda e: f"{e.p99_ms:.3f}", None),
        ("runs/s (from p50)", lambda e: f"{e.runs_per_s:,.1f}", None),
        ("peak RSS MB", lambda e: f"{e.peak_rss_mb:.0f} (+{max(e.peak_rss_mb - e.start_rss_mb, 0):.0f})", None),
    ]
    for label, cell, ratio in rows:
        cells = [cell(e) for e in report.engines]
        if ratios is not None:
            cells.append(f"x{ratios[ratio]:.2f}" if ratio else "")
        out.add_row(label, *cells)
    return out


def summary_lines(report: BenchReport) -> list[str]:
    """Plain lines to print under the table: inputs, agreement, memory method and the noise note."""
    lines = ["inputs: " + ", ".join(f"{i['name']} {i['dtype']}{i['shape']} ({i['from']})" for i in report.inputs)]
    if report.max_abs_diff is not None:
        lines.append(f"outputs of the first runs differ by at most {report.max_abs_diff:.3g}")
    lines.append("peak RSS: the process's peak over each engine's load and runs (+ its rise over the start)"
                 if report.rss_method == "VmHWM" else
                 "peak RSS: ru_maxrss, the process's peak so far (cannot be reset here; later engines include "
                 "earlier ones)")
    lines.append(NOTE)
    return lines
