"""Slimming side by side: nodes, bytes and seconds for the source, onnxsim, onnxslim and edgepack.

    python benchmarks/slim_vs_peers.py [--repeat 3] [--json out.json] [sample ...]

Nodes count every node of the main graph and of all If/Loop/Scan bodies, Constant nodes included.
Seconds are the median of --repeat runs of each tool in this process, on the same loaded model.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import time
import warnings
from collections.abc import Callable

import onnx
from rich.console import Console
from rich.table import Table

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.graphs import count_nodes
from edgepack.packager.slim import SLIMMED, slim
from edgepack.runtime.model_file import load_model


def run_onnxsim(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnxsim

    simplified, ok = onnxsim.simplify(model)
    if not ok:
        raise RuntimeError("onnxsim's own check failed")
    return simplified


def run_onnxslim(model: onnx.ModelProto) -> onnx.ModelProto:
    import onnxslim

    return onnxslim.slim(model)


def run_edgepack(model: onnx.ModelProto) -> onnx.ModelProto:
    """edgepack's slim stage, timed cold: the process's cache of slimmed models is emptied first, as the peers keep
    none."""
    SLIMMED.clear()
    return slim(check_model(model, "benchmark"))[0]


TOOLS: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "onnxsim": run_onnxsim,
    "onnxslim": run_onnxslim,
    "edgepack": run_edgepack,
}


def measure(tool: Callable[[onnx.ModelProto], onnx.ModelProto], model: onnx.ModelProto, repeat: int
            ) -> dict[str, object]:
    times = []
    result = None
    for _ in range(repeat):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = tool(copy)
        except Exception as exc:  # a peer failing on a model is a result to report
            return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:60]}
        times.append(time.perf_counter() - start)
    assert result is not None
    return {"nodes": count_nodes(result), "bytes": result.ByteSize(), "seconds": statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=samples.names())
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    rows = {}
    for name in args.names:
        model = load_model(samples.path(name)).model
        rows[name] = {"source": {"nodes": count_nodes(model), "bytes": model.ByteSize(), "seconds": 0.0}}
        for tool_name, tool in TOOLS.items():
            rows[name][tool_name] = measure(tool, model, args.repeat)

    table = Table(title=f"slim: nodes / bytes / seconds (median of {args.repeat})", title_justify="left")
    table.add_column("model")
    for column in ("source", *TOOLS, "edgepack/onnxslim nodes"):
        table.add_column(column, justify="right")
    for name, row in rows.items():
        cells = []
        for tool_name in ("source", *TOOLS):
            r = row[tool_name]
            cells.append(r["error"] if "error" in r else
                         f"{r['nodes']} / {r['bytes'] / 1e6:.2f} MB / {r['seconds']:.2f} s")
        ours, peer = row["edgepack"], row["onnxslim"]
        cells.append(f"{ours['nodes'] / peer['nodes']:.2f}" if "nodes" in ours and "nodes" in peer else "-")
        table.add_row(name, *cells)
    Console(width=200).print(table)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
