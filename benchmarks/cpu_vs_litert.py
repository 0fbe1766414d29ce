"""The C core against LiteRT (TensorFlow Lite's runtime, XNNPACK's kernels) and onnxruntime, one thread each.

    python benchmarks/cpu_vs_litert.py [--blocks 5] [--block-ms 300] [--warmup 3] [--seed 0] [model ...]

Models: sample names or real-model corpus names (default: the four sample models), slimmed and fed exactly as in
`cpu_vs_onnxruntime.py` (edgepack's plan of the slimmed model on the `cpu` core; onnxruntime, ORT_ENABLE_ALL, on
the same slimmed model). LiteRT runs that model converted by onnx2tf, its inputs fixed to the feeds' shapes first,
as float32 `.tflite` (cached by the model's sha256 and the LiteRT environment's versions, as is a failure to
convert; a conversion may take 10 minutes), with LiteRT's default delegate for float models (XNNPACK).

TensorFlow, onnx2tf and LiteRT pin older numpy and onnx than edgepack, so they live in their own environment,
`<edgepack cache>/bench-litert`, made with this Python's venv and pip from the package registry on first use (the
script says when; a few minutes, about 1.5 GB). LiteRT runs there in a worker process (`litert_worker.py`); its
calls are timed there, by the same clock, and its blocks interleave with the other two sides' in one run.

Fidelity before timing: each side's outputs against onnxruntime's on the same feeds (max |diff| over the outputs,
relative to the largest |value| of onnxruntime's). A model onnx2tf cannot convert, or whose LiteRT outputs differ
from onnxruntime's by more than 1e-3 relative, is named with the reason and timed without LiteRT.

Timing: --blocks blocks; in each, every side opens a fresh session (interpreter), runs --warmup calls untimed (one
where a call takes longer than a block), then N calls (N makes the side's block about --block-ms, at least 3), the
side order reversed every other block. A side's figure is the median of its block medians; ratios are cpu / LiteRT
and cpu / onnxruntime (below 1: the C core is faster), with the range of the per-block ratios. The geometric means
are printed. The machine is shared and noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import select
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from rich.console import Console
from rich.table import Table

from edgepack.devices.local import cpu_model
from edgepack.runtime.native.build import cache_root

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script
from benchmarks.cpu_vs_onnxruntime import (  # noqa: E402
    MODELS,
    Case,
    cpu_session,
    geometric_mean,
    load_case,
    opener,
    ort_session,
    timed,
)

REQUIREMENTS = ["onnx2tf==1.29.24", "tensorflow-cpu==2.19.1", "tf-keras==2.19.0", "ai-edge-litert==2.1.0",
                "onnx==1.19.1", "onnxruntime==1.23.0", "onnx-graphsurgeon==0.5.8", "onnxsim==0.4.36",
                "sng4onnx==2.0.1", "psutil", "numpy==1.26.4"]
"""The LiteRT environment: onnx2tf 1.29 is the last for Python 3.11, and these are the versions it works with."""
WORKER = Path(__file__).with_name("litert_worker.py")
FIDELITY = 1e-3
ANSWER_SECONDS = 600.0
"""How long the worker may take over a conversion, a call or a block before the model is left out."""
SIDES = ("cpu", "onnxruntime", "litert")


@dataclass
class LiteRTCase:
    case: Case
    tflite: str | None = None
    why_not: str | None = None
    """Why LiteRT is left out of this model, in one line."""
    diffs: dict[str, float] = field(default_factory=dict)
    blocks: dict[str, list[float]] = field(default_factory=dict)


def environment(console: Console) -> Path:
    """The LiteRT environment's Python, made on first use."""
    folder = cache_root().parent / "bench-litert"
    python = folder / "bin" / "python"
    stamp = folder / "requirements.txt"
    if python.is_file() and stamp.is_file() and stamp.read_text() == "\n".join(REQUIREMENTS):
        return python
    console.print(f"installing TensorFlow, onnx2tf and LiteRT into {folder} (first use: a few minutes)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    pip = subprocess.run([str(python), "-m", "pip", "install", "-q", *REQUIREMENTS], capture_output=True, text=True)
    if pip.returncode != 0:
        raise SystemExit(f"could not install LiteRT's environment in {folder}: {pip.stderr.strip()[-1500:]}\n"
                         "fix: check that the package registry is reachable, then run again")
    stamp.write_text("\n".join(REQUIREMENTS))
    return python


class Worker:
    """The LiteRT worker process, one JSON request and answer a line; one that does not answer in time is replaced."""

    def __init__(self, python: Path) -> None:
        self.python = python
        self.process = self._start()

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen([str(self.python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)

    def convert(self, source: Path, folder: Path) -> dict:
        """onnx2tf in a process of its own, so that TensorFlow stays out of the timed worker."""
        try:
            done = subprocess.run([str(self.python), str(WORKER), "convert", str(source), str(folder)],
                                  capture_output=True, text=True, timeout=ANSWER_SECONDS)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer in {ANSWER_SECONDS:.0f} s", "timeout": True}
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines else {"error": f"onnx2tf exited with {done.returncode}"}

    def ask(self, **request: object) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        if not select.select([self.process.stdout], [], [], ANSWER_SECONDS)[0]:
            self.process.kill()
            self.process = self._start()
            return {"error": f"no answer in {ANSWER_SECONDS:.0f} s"}
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the LiteRT worker stopped; run benchmarks/litert_worker.py in its environment to see why")
        return json.loads(line)


def static_model(case: Case) -> bytes:
    """The slimmed model with its inputs fixed to the feeds' shapes (onnx2tf makes static NHWC tensors of them)."""
    model = onnx.load_from_string(case.model)
    for value in model.graph.input:
        if value.name in case.feeds:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for size in case.feeds[value.name].shape:
                shape.dim.add().dim_value = size
    for value in model.graph.output:
        value.type.tensor_type.ClearField("shape")
    del model.graph.value_info[:]
    return model.SerializeToString()


def relative_diff(reference: np.ndarray, value: np.ndarray) -> float:
    if not reference.size:
        return 0.0
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return float(np.max(np.abs(reference.astype(np.float64) - value.astype(np.float64)))) / scale


def litert_outputs(worker: Worker, item: LiteRTCase, feeds_path: str, folder: Path,
                   names: list[str], shapes: list[tuple[int, ...]]) -> dict[str, np.ndarray] | str:
    """LiteRT's outputs in the ONNX layout, by the ONNX names (onnx2tf's names them Identity, Identity_1, ...: each
    is the first left of the ONNX output's shape, channels last or not); or why they cannot be read, in one line."""
    reply = worker.ask(outputs=item.tflite, feeds=feeds_path, to=str(folder / "litert-out.npz"))
    if "error" in reply:
        return reply["error"]
    arrays: list[np.ndarray | None] = list(np.load(folder / "litert-out.npz").values())
    if len(arrays) != len(names):
        return f"LiteRT has {len(arrays)} outputs, the model {len(names)}"
    laid_out: dict[str, np.ndarray] = {}
    for name, shape in zip(names, shapes):
        fits = [i for i, value in enumerate(arrays) if value is not None and
                (value.shape == shape or value.ndim >= 3 and np.moveaxis(value, -1, 1).shape == shape)]
        if not fits:
            return f"no LiteRT output has the shape of onnxruntime's {name}, {list(shape)}"
        value, arrays[fits[0]] = arrays[fits[0]], None
        laid_out[name] = value if value.shape == shape else np.moveaxis(value, -1, 1)
    return laid_out


def prepare(worker: Worker, item: LiteRTCase, folder: Path) -> None:
    """Converts the model (or takes the cached .tflite) and checks every side's outputs against onnxruntime's."""
    case = item.case
    reference = ort_session(case.model)(case.feeds)
    names = list(reference)
    ours = cpu_session(case.plan)(case.feeds)
    item.diffs["cpu"] = max(relative_diff(reference[name], ours[name]) for name in names)
    static = static_model(case)
    key = hashlib.sha256(static + "\n".join(REQUIREMENTS).encode()).hexdigest()[:16]
    converted = cache_root().parent / "bench-litert" / "models" / key
    tflite, failed = converted / f"{case.name}_float32.tflite", converted / "failed.txt"
    if failed.is_file():
        item.why_not = failed.read_text()
        return
    if not tflite.is_file():
        converted.mkdir(parents=True, exist_ok=True)
        (converted / f"{case.name}.onnx").write_bytes(static)
        reply = worker.convert(converted / f"{case.name}.onnx", converted)
        if "error" in reply:
            item.why_not = f"onnx2tf could not convert it: {reply['error']}"
            if not reply.get("timeout"):
                failed.write_text(item.why_not)
            return
    item.tflite = str(tflite)
    feeds_path = str(folder / f"{case.name}-feeds.npz")
    np.savez(feeds_path, **case.feeds)
    theirs = litert_outputs(worker, item, feeds_path, folder, names, [reference[n].shape for n in names])
    if isinstance(theirs, str):
        item.why_not, item.tflite = theirs, None
        return
    item.diffs["litert"] = max(relative_diff(reference[name], theirs[name]) for name in names)
    if item.diffs["litert"] > FIDELITY:
        item.why_not, item.tflite = f"LiteRT's outputs differ from onnxruntime's by {item.diffs['litert']:.1e}", None


def block_median(side: str, item: LiteRTCase, worker: Worker, feeds_path: str, warmup: int, runs: int) -> float:
    if side == "litert":
        reply = worker.ask(block=item.tflite, feeds=feeds_path, warmup=warmup, runs=runs)
        if "error" in reply:
            raise LeftOut(reply["error"])
        return statistics.median(reply["seconds"])
    run = opener(side, item.case)()
    timed(run, item.case.feeds, warmup)
    return statistics.median(timed(run, item.case.feeds, runs)["wall"])


class LeftOut(Exception):
    """LiteRT failed or timed out on a block."""


def time_case(item: LiteRTCase, worker: Worker, folder: Path, blocks: int, block_s: float, warmup: int) -> None:
    """Blocks of about `block_s` per side (at least 3 calls; a side slower than a block warms up with one call);
    LiteRT is left out of the model where a block of it fails."""
    try:
        time_sides(item, worker, folder, blocks, block_s, warmup)
    except LeftOut as error:
        item.why_not, item.tflite = f"LiteRT failed while timed: {error}", None
        time_sides(item, worker, folder, blocks, block_s, warmup)


def time_sides(item: LiteRTCase, worker: Worker, folder: Path, blocks: int, block_s: float, warmup: int) -> None:
    sides = [side for side in SIDES if side != "litert" or item.tflite]
    feeds_path = str(folder / f"{item.case.name}-feeds.npz")
    call_s = {side: block_median(side, item, worker, feeds_path, 1, 3) for side in sides}
    runs = {side: max(3, round(block_s / call_s[side])) for side in sides}
    warmups = {side: warmup if call_s[side] < block_s else 1 for side in sides}
    item.blocks = {side: [] for side in sides}
    for index in range(blocks):
        for side in sides if index % 2 == 0 else sides[::-1]:
            item.blocks[side].append(block_median(side, item, worker, feeds_path, warmups[side], runs[side]))


def ratio_cell(item: LiteRTCase, peer: str) -> str:
    if peer not in item.blocks:
        return "-"
    spread = [a / b for a, b in zip(item.blocks["cpu"], item.blocks[peer])]
    ratio = statistics.median(item.blocks["cpu"]) / statistics.median(item.blocks[peer])
    return f"{ratio:.2f} ({min(spread):.2f}-{max(spread):.2f})"


def report(console: Console, items: list[LiteRTCase]) -> None:
    table = Table(title=f"cpu core against LiteRT (XNNPACK) and onnxruntime, one thread, {cpu_model()}")
    for column in ("model", "cpu ms", "ort ms", "LiteRT ms", "cpu / ort (range)", "cpu / LiteRT (range)",
                   "cpu diff", "LiteRT diff"):
        table.add_column(column)
    for item in items:
        ms = {side: f"{statistics.median(times) * 1000:.3f}" for side, times in item.blocks.items()}
        table.add_row(item.case.name, ms["cpu"], ms["onnxruntime"], ms.get("litert", "-"),
                      ratio_cell(item, "onnxruntime"), ratio_cell(item, "litert"), f"{item.diffs['cpu']:.1e}",
                      f"{item.diffs['litert']:.1e}" if "litert" in item.diffs else "-")
    console.print(table)
    for peer, label in (("onnxruntime", "onnxruntime"), ("litert", "LiteRT")):
        ratios = [statistics.median(i.blocks["cpu"]) / statistics.median(i.blocks[peer]) for i in items
                  if peer in i.blocks]
        if ratios:
            console.print(f"cpu / {label}: geometric mean {geometric_mean(ratios):.2f} over {len(ratios)} models")
    for item in items:
        if item.why_not:
            console.print(f"LiteRT left out on {item.case.name}: {item.why_not}")
    console.print("diff: max |output - onnxruntime's| over the largest |onnxruntime output|, same feeds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--block-ms", type=float, default=300.0)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    console = Console(width=200)
    worker = Worker(environment(console))
    items = [LiteRTCase(load_case(name, args.seed)) for name in args.models]
    with tempfile.TemporaryDirectory() as tmp:
        for item in items:
            console.print(f"{item.case.name}: converting and checking outputs")
            prepare(worker, item, Path(tmp))
        for item in items:
            time_case(item, worker, Path(tmp), args.blocks, args.block_ms / 1000, args.warmup)
    report(console, items)


if __name__ == "__main__":
    main()
