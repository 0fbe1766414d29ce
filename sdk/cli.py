"""The `edgepack` command line: build, inspect, profiles, samples."""

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

from .errors import EdgepackError

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)


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


def cmd_build(args: argparse.Namespace) -> int:
    from .build import build
    from .input_shapes import parse_input_shapes

    shapes = parse_input_shapes(args.input_shape or [])
    if args.json:
        result = build(args.model, args.profile, args.output, shapes, force=args.force)
        print(json.dumps(result.report.as_dict(), indent=2))
        return 0
    with RichReporter(stderr) as reporter:
        result = build(args.model, args.profile, args.output, shapes, force=args.force, reporter=reporter)
    report = result.report
    table = Table(title=f"edgepack build: {Path(report.model).name} for {report.profile}", title_justify="left")
    for column in ("", "source", "bundle"):
        table.add_column(column, justify="right" if column else "left")
    table.add_row("nodes", str(report.source_nodes), str(report.slim_nodes))
    table.add_row("bytes", f"{report.source_bytes:,}", f"{report.bundle_bytes:,}")
    table.add_row("partitions", "", ", ".join(f"{p['id']}:{p['provider']}" for p in report.partitions))
    table.add_row("fidelity", "", "not verified (no runtime in this version)" if report.fidelity is None
                  else json.dumps(report.fidelity))
    table.add_row("time", "", f"{sum(s.seconds for s in report.stages):.2f} s")
    stdout.print(table)
    stdout.print(f"bundle: [bold]{escape(str(result.bundle_dir))}[/]")
    return 0


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
    summary.add_row("quantization", f"weights {manifest['quantization']['weights']}, "
                                    f"activations {manifest['quantization']['activations']}")
    summary.add_row("fidelity", "not verified" if manifest["fidelity"] is None else json.dumps(manifest["fidelity"]))
    summary.add_row("passes", ", ".join(f"{p['name']} -{p['removed']}"
                                        + ("" if p["status"] == "ok" else f" ({p['status']})")
                                        for p in manifest["passes"]))
    stdout.print(summary)
    _print_values("inputs", manifest["inputs"])
    _print_values("outputs", manifest["outputs"])
    parts = Table(title="partitions", title_justify="left")
    for column in ("id", "provider", "artefact", "nodes", "inputs", "outputs"):
        parts.add_column(column)
    for p in manifest["partitions"]:
        parts.add_row(p["id"], p["provider"], escape(p["artifact"]), str(p["nodes"]), escape(", ".join(p["inputs"])),
                      escape(", ".join(p["outputs"])))
    stdout.print(parts)
    arts = Table(title="artefacts (sha256 checked)", title_justify="left")
    for column in ("path", "bytes", "sha256"):
        arts.add_column(column, justify="right" if column == "bytes" else "left")
    for path, a in manifest["artifacts"].items():
        arts.add_row(escape(path), f"{a['bytes']:,}", a["sha256"][:16] + "...")
    stdout.print(arts)


def cmd_profiles(args: argparse.Namespace) -> int:
    from .build import target_available
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

    names = args.names or samples.names()
    rows = []
    with stderr.status("fetching sample models") as status:
        for name in names:
            status.update(f"fetching {name}")
            rows.append({"name": name, "kind": samples.SAMPLES[name].kind if name in samples.SAMPLES else "",
                         "path": str(samples.path(name, args.cache_dir))})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = Table(title="sample models", title_justify="left")
    table.add_column("name")
    table.add_column("kind")
    table.add_column("path", overflow="fold")
    for row in rows:
        table.add_row(row["name"], row["kind"], escape(row["path"]))
    stdout.print(table)
    return 0


def parser() -> argparse.ArgumentParser:
    from edgepack import __version__

    root = argparse.ArgumentParser(prog="edgepack", description="Take one ONNX model to browsers, phones and "
                                   "edge boards: slim, quantize, partition, bundle, verify.")
    root.add_argument("--version", action="version", version=f"edgepack {__version__}")
    root.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    commands = root.add_subparsers(dest="command", metavar="COMMAND", required=True)

    b = commands.add_parser("build", help="build a bundle of a model for a device profile")
    b.add_argument("model", help="the .onnx file (or a folder holding one)")
    b.add_argument("--profile", "-p", required=True, help="a built-in profile name or a .toml file")
    b.add_argument("-o", "--output", default="dist", help="folder to write the bundle into (default: dist)")
    b.add_argument("--input-shape", action="append", metavar="NAME=D1,D2,...",
                   help="pin an input's shape, e.g. x=1,3,224,224 (repeatable)")
    b.add_argument("--force", action="store_true", help="replace an existing bundle")
    b.add_argument("--json", action="store_true", help="print the build report as JSON")
    b.set_defaults(func=cmd_build)

    i = commands.add_parser("inspect", help="describe a model or a bundle")
    i.add_argument("path", help="a .onnx file, a folder holding one, or a bundle folder")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=cmd_inspect)

    p = commands.add_parser("profiles", help="list the built-in device profiles")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_profiles)

    s = commands.add_parser("samples", help="fetch the sample models into the cache and list them")
    s.add_argument("names", nargs="*", help="sample names (default: all)")
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
