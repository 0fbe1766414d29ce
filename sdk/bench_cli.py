"""`edgepack bench`: on this host beside onnxruntime, on a device (host, qemu-arm64, ssh://, adb, chromium), and
`bench compare` of result files; JSON and HTML output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.markup import escape

from edgepack.runtime.errors import EdgepackError

from .console import stdout

HOST_RUNS = 50
DEVICE_RUNS = 5


def run_bench(args: argparse.Namespace) -> int:
    """Benchmarks, and with --json, prints JSON even when it fails: {"error": the paragraph, "where", "fix"}."""
    try:
        return bench_command(args)
    except EdgepackError as error:
        if args.json:
            print(json.dumps({"error": error.paragraph(), "where": error.where, "fix": error.fix}, indent=2))
        raise


def bench_command(args: argparse.Namespace) -> int:
    from .bench import bench, summary_lines, table
    from .input_files import load_inputs
    from .sample_inputs import parse_dims

    if args.model == "compare":
        return cmd_bench_compare(args)
    if args.results:
        raise EdgepackError(f"unexpected arguments after the model: {' '.join(args.results)}", where="bench",
                            fix="pass one model or bundle, or `edgepack bench compare A.json B.json ...`")
    if args.html and args.device is None:
        raise EdgepackError("--html writes the report of a device bench (--device host, qemu-arm64, ssh://..., adb or "
                            "chromium) or of `bench compare`", where="--html", fix="add a --device, or leave out "
                                                                                   "--html")
    if args.device:
        return cmd_bench_device(args)
    if args.compare == "onnxruntime-web":
        raise EdgepackError("--compare onnxruntime-web runs in a browser", where="--compare",
                            fix="add --device chromium (and pass a web bundle), or use --compare onnxruntime")
    runs = HOST_RUNS if args.runs is None else args.runs
    report = bench(args.model, args.provider, runs, args.warmup, args.threads, args.compare, args.source,
                   load_inputs(args.input or []), parse_dims(args.dim or []))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    stdout.print(table(report))
    for line in summary_lines(report):
        stdout.print(escape(line), soft_wrap=True)
    return 0


def cmd_bench_device(args: argparse.Namespace) -> int:
    if args.device == "chromium":
        return cmd_bench_chromium(args)
    if args.provider:
        raise EdgepackError("--device runs the bundle's own C library: --provider does not apply",
                            where="--device", fix="leave out --provider")
    return cmd_bench_library(args)


def cmd_bench_library(args: argparse.Namespace) -> int:
    from .bench_device import bench_library
    from .bench_html import ratio_lines
    from .bench_result import summary_lines
    from .input_files import load_inputs
    from .sample_inputs import parse_dims

    result = bench_library(args.model, args.device, DEVICE_RUNS if args.runs is None else args.runs, args.warmup,
                           load_inputs(args.input or []), parse_dims(args.dim or []),
                           identity=Path(args.identity) if args.identity else None, profile_ops=not args.no_ops,
                           compare=[args.compare] if args.compare else [], source=args.source, threads=args.threads)
    everything = [result, *result.get("peers", [])]
    if args.html:
        write_bench_html(everything, Path(args.html))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for one in everything:
            for line in summary_lines(one):
                stdout.print(escape(line), soft_wrap=True)
        if len(everything) > 1:
            for line in ratio_lines(everything):
                stdout.print(escape(line), soft_wrap=True)
    return 0 if all(one["fidelity"]["passed"] for one in everything) else 1


def cmd_bench_compare(args: argparse.Namespace) -> int:
    from .bench_html import ratio_lines, read_results

    if len(args.results) < 1:
        raise EdgepackError("`bench compare` needs bench result files", where="bench compare",
                            fix="write them with `edgepack bench BUNDLE --device ... --json > A.json`")
    results = read_results([Path(path) for path in args.results])
    if args.html:
        write_bench_html(results, Path(args.html))
    if args.json:
        print(json.dumps({"results": args.results, "lines": ratio_lines(results)}, indent=2))
    else:
        for line in ratio_lines(results):
            stdout.print(escape(line), soft_wrap=True)
    return 0


def write_bench_html(results: list[dict[str, Any]], path: Path) -> None:
    """Writes the bench report page at `path` (through a temporary file renamed into place)."""
    from .bench_html import render

    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(render(results))
        temporary.replace(path)
    except OSError as error:
        raise EdgepackError(f"cannot write the report {str(path)!r}: {error.strerror}", where="--html",
                            fix="choose a writable path") from error


def cmd_bench_chromium(args: argparse.Namespace) -> int:
    from .bench_chromium import bench_in_chromium, summary_lines
    from .input_files import load_inputs
    from .sample_inputs import parse_dims

    report = bench_in_chromium(args.model, args.provider, DEVICE_RUNS if args.runs is None else args.runs,
                               args.warmup, load_inputs(args.input or []), parse_dims(args.dim or []),
                               compare=args.compare, source=args.source)
    result = report.as_dict()
    if args.html:
        write_bench_html([result, *result.get("peers", [])], Path(args.html))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for line in summary_lines(report):
            stdout.print(escape(line), soft_wrap=True)
    return 0 if report.passed else 1
