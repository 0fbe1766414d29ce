"""Session overhead: edgepack's Session against calling OpenVINO directly on the same IR.

    python benchmarks/session_overhead.py [BUNDLE] [--model ppocr-rec] [--profile intel-nuc]
                                          [--blocks 10] [--runs 20] [--warmup 5] [--json out.json]

BUNDLE is a bundle folder whose partitions all run on OpenVINO from IR (`*.xml`). Without it, sample --model is
built for --profile into a temporary folder. Both sides compile the same IR for the CPU with fp32 inference
precision and one thread and run the same feeds: (a) `Session(bundle, provider_options=...).run(feeds)`,
(b) `core.compile_model(core.read_model(xml), "CPU", ...)`, one infer request, `request.infer(feeds)` (outputs
copied, as the provider does). They are timed in this process in alternating blocks of --runs calls, the order
flipped every block; the medians are compared. Target: Session within 5% of direct OpenVINO.

Feeds: the sample catalog's inputs when the bundle was built from a sample model, else seeded random inputs.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import edgepack
from edgepack import samples
from edgepack.runtime import Session
from edgepack.runtime.bundle_format import read_manifest
from edgepack.sample_inputs import sample_feeds

TARGET = 1.05
"""Session's median may be at most 5% above direct OpenVINO's."""
SESSION_OPTIONS = {"openvino": {"inference_precision": "fp32", "threads": 1}}
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}

Feeds = dict[str, np.ndarray]


class DirectOpenVINO:
    """The bundle's IR partitions compiled and run with OpenVINO's own API, one infer request each."""

    def __init__(self, bundle: Path, manifest: dict[str, Any]) -> None:
        import openvino as ov

        core = ov.Core()
        self.steps = []
        for partition in manifest["partitions"]:
            compiled = core.compile_model(core.read_model(str(bundle / partition["artifact"])), "CPU", OV_CONFIG)
            outputs = [(port.get_any_name(), port) for port in compiled.outputs]
            self.steps.append((compiled.create_infer_request(), partition["inputs"], outputs))
        self.outputs = [o["name"] for o in manifest["outputs"]]

    def run(self, feeds: Feeds) -> Feeds:
        values = dict(feeds)
        for request, inputs, outputs in self.steps:
            results = request.infer({name: values[name] for name in inputs})  # share_outputs=False: copies
            values.update({name: results[port] for name, port in outputs})
        return {name: values[name] for name in self.outputs}


def check_plan(bundle: Path) -> dict[str, Any]:
    """The manifest, if every partition is OpenVINO IR."""
    manifest = read_manifest(bundle)
    other = [p for p in manifest["partitions"] if p["provider"] != "openvino" or not p["artifact"].endswith(".xml")]
    if other or not manifest["partitions"]:
        raise SystemExit(f"error: {bundle} is not an OpenVINO-only plan: partitions "
                         f"{[(p['id'], p['provider'], p['artifact']) for p in other] or 'none'}. Build it for an "
                         "OpenVINO profile (e.g. intel-nuc).")
    return manifest


def feeds_for(manifest: dict[str, Any], session: Session) -> tuple[Feeds, str]:
    """The sample catalog's feeds when the bundle's source is a sample model, else seeded random ones."""
    source = manifest.get("source", {}).get("file")
    for name, sample in samples.SAMPLES.items():
        if source in (Path(sample.member).name, f"{name}.onnx"):
            return samples.feeds(name), f"sample {name}"
    return sample_feeds(session.inputs), "generated (sample_feeds, seed 0)"


def time_blocks(sides: dict[str, Callable[[Feeds], Feeds]], feeds: Feeds, blocks: int, runs: int, warmup: int
                ) -> dict[str, list[float]]:
    """Seconds of each call, per side; blocks of `runs` calls alternate between the sides, order flipped each block."""
    names = list(sides)
    for name in names:
        for _ in range(warmup):
            sides[name](feeds)
    times: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    for block in range(blocks):
        for name in names if block % 2 == 0 else names[::-1]:
            run = sides[name]
            for _ in range(runs):
                start = time.perf_counter()
                run(feeds)
                times[name].append(time.perf_counter() - start)
    return times


def measure(bundle: Path, blocks: int, runs: int, warmup: int) -> dict[str, Any]:
    manifest = check_plan(bundle)
    session = Session(bundle, provider_options=SESSION_OPTIONS)
    direct = DirectOpenVINO(bundle, manifest)
    feeds, feeds_from = feeds_for(manifest, session)
    ours, theirs = session.run(feeds), direct.run(feeds)
    diff = max(float(np.max(np.abs(ours[k].astype(np.float64) - theirs[k].astype(np.float64)))) for k in ours)
    times = time_blocks({"session": session.run, "direct": direct.run}, feeds, blocks, runs, warmup)
    medians = {name: statistics.median(t) * 1000 for name, t in times.items()}
    ratio = medians["session"] / medians["direct"]
    per_block = [statistics.median(times["session"][i:i + runs]) / statistics.median(times["direct"][i:i + runs])
                 for i in range(0, blocks * runs, runs)]
    return {"bundle": str(bundle), "partitions": len(manifest["partitions"]), "feeds": feeds_from,
            "shapes": {k: list(v.shape) for k, v in feeds.items()}, "blocks": blocks, "runs_per_block": runs,
            "session_ms": medians["session"], "direct_ms": medians["direct"], "ratio": ratio,
            "overhead_us": (medians["session"] - medians["direct"]) * 1000, "block_ratios": per_block,
            "max_abs_diff": diff,
            "target": f"Session within {TARGET - 1:.0%} of direct OpenVINO", "pass": ratio <= TARGET}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, help="an OpenVINO-only bundle folder (default: build --model)")
    parser.add_argument("--model", default="ppocr-rec", help="sample model to build when no bundle is given")
    parser.add_argument("--profile", default="intel-nuc", help="profile to build it for (default: intel-nuc)")
    parser.add_argument("--blocks", type=int, default=10, help="alternating blocks per side (default: 10)")
    parser.add_argument("--runs", type=int, default=20, help="timed calls per block (default: 20)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per side first (default: 5)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as out:
        bundle = args.bundle
        if bundle is None:
            try:
                bundle = edgepack.build(samples.path(args.model), profile=args.profile, output_dir=out,
                                        sample_inputs=[samples.feeds(args.model)]).bundle_dir
            except edgepack.EdgepackError as exc:
                raise SystemExit(f"error: cannot build {args.model} for {args.profile}: {exc}") from None
        result = measure(bundle, args.blocks, args.runs, args.warmup)

    table = Table(title=f"Session overhead: {Path(result['bundle']).name}", title_justify="left")
    for column in ("", "median ms", "calls"):
        table.add_column(column, justify="left" if not column else "right")
    calls = str(result["blocks"] * result["runs_per_block"])
    table.add_row("Session.run", f"{result['session_ms']:.3f}", calls)
    table.add_row("OpenVINO infer request", f"{result['direct_ms']:.3f}", calls)
    console = Console(width=120)
    console.print(table)
    console.print(f"{result['partitions']} partition{'s' if result['partitions'] > 1 else ''}; feeds: "
                  f"{result['feeds']} {result['shapes']}")
    blocks = result["block_ratios"]
    console.print(f"Session / direct per block pair: median {statistics.median(blocks):.3f}, range "
                  f"{min(blocks):.3f} to {max(blocks):.3f} (the spread is the machine's noise)")
    verdict = "[green]PASS[/]" if result["pass"] else "[red]FAIL[/]"
    console.print(f"Session / direct: {result['ratio']:.3f} ({result['overhead_us']:+.0f} us a call); outputs differ "
                  f"by at most {result['max_abs_diff']:.3g}")
    console.print(f"{verdict} target: {result['target']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
