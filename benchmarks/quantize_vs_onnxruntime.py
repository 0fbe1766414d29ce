"""int8 side by side on onnxruntime: edgepack's int8 forms against onnxruntime's own quantizer.

    python benchmarks/quantize_vs_onnxruntime.py [--blocks 9] [--runs 10] [--warmup 3] [--calibration 32]
                                                 [--held-out 50] [--seq 16] [model ...]

Models: ppocr-cls and ppocr-rec (converted to opset 13 when older, as int8 DequantizeLinear with an axis needs) and
the tiny transformer at realistic width (`tiny_transformer(hidden=384, layers=6)`, random weights, input
(1, --seq, 384)), each slimmed by edgepack; the slimmed fp32 model is the reference. Variants:

    fp32            the slimmed model
    ep weight-only  quantize(m, "int8"): int8 weights per output channel, fp32 compute, nearest rounding
    ep weight-only calibrated
                    the same, rounded with compensated errors on the calibration samples (`compensate.py`)
    ep dynamic      quantize(m, "int8", activations="int8"): DynamicQuantizeLinear + MatMulInteger (MatMul/Gemm),
                    7-bit weights (`weights_int.INTEGER_LEVELS`)
    ep static       quantize(..., calibration=Calibration(samples, onnxruntime, "minmax")): uint8 QDQ around
                    Conv/MatMul/Gemm, int32 bias, 7-bit weights rounded with compensated errors on the same samples
                    (both int8 compute variants as a generic build ships them: the op classes measured slower
                    on onnxruntime stay fp32, and a model not faster as a whole keeps fp32 compute)
    ep static int8 compute
                    the same QDQ form on every Conv/MatMul/Gemm, whatever its speed: what `ep static` falls back
                    from where it is slower
    ort dynamic     onnxruntime.quantization.quantize_dynamic(QInt8 weights, per_channel=True), its default ops
    ort static      quantize_static(QDQ, per_channel=True, MinMax) on the same calibration samples, its default
                    ops (which include more than Conv/MatMul/Gemm)
    ort static reduce_range
                    the same with reduce_range=True: 7-bit weights, as edgepack's int8 compute uses (on an x86 CPU
                    without VNNI onnxruntime's fused int8 kernels saturate 8-bit weights: PP-OCR cls top-1 0.59)

Inputs: for the OCR models synthetic text-line images (`samples.feeds`), calibration from seeds 1000, 1001, ...
and held-out inputs from seeds 0, 1, ...; for the transformer standard-normal tokens from the same seeds.

bytes: the serialized model, and its ratio to fp32. latency: onnxruntime on the CPU (1 intra- and 1 inter-op
thread, ORT_ENABLE_ALL), all variants on held-out input 0, timed in this process in --blocks blocks of --runs calls
that rotate over the variants (the order shifted every block), each block on a fresh session called --warmup times
first (two sessions of one model can differ by a third in speed for their whole life); median ms per call over all
blocks, and the ratio to fp32 with the range of the per-block ratios (the spread is the machine's noise). Absolute
times are this machine's; read the ratios.

fidelity: against fp32 on the --held-out inputs: mean cosine of the output, and for the OCR models mean top-1
agreement over the last axis (the class for ppocr-cls, the character per time step for ppocr-rec). A variant that
fails to quantize or to run shows the reason in its row.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import logging
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter
from onnxruntime import quantization as ortq
from rich.console import Console
from rich.table import Table

from edgepack import samples
from edgepack.model_check import check_model
from edgepack.packager.quantize import Calibration, QuantizeResult, quantize
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.samples.tiny import tiny_transformer
from edgepack.targets import TARGETS
from edgepack.targets.generic import onnxruntime_session
from edgepack.tune import choose_int8_compute
from edgepack.verify import compare

Feeds = dict[str, np.ndarray]
MODELS = ("ppocr-cls", "ppocr-rec", "transformer-384x6")
TOP1 = {"ppocr-cls", "ppocr-rec"}
"""Models whose output scores a class (or a character per time step) on its last axis."""
INT8_OPSET = 13
CALIBRATION_SEED = 1000


@dataclass(frozen=True)
class Case:
    name: str
    model: onnx.ModelProto
    """Slimmed fp32 reference."""
    calibration: list[Feeds]
    held_out: list[Feeds]


@dataclass
class Row:
    variant: str
    model: bytes | None = None
    error: str | None = None
    session: ort.InferenceSession | None = None
    times: list[float] | None = None
    cosine: float | None = None
    top1: float | None = None


def serialized(model: onnx.ModelProto) -> bytes:
    """`model` as onnxruntime 1.31 reads it (IR 10; onnx 1.23 writes IR 14)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = 10
    return copy.SerializeToString()


def outputs(run: ort.InferenceSession, feeds: Feeds) -> Feeds:
    names = [o.name for o in run.get_outputs()]
    return dict(zip(names, run.run(names, feeds)))


class OnnxruntimeRun:
    """edgepack's calibration `Run` on onnxruntime, one session kept for the model object last given."""

    def __init__(self) -> None:
        self.model: onnx.ModelProto | None = None
        self.session: ort.InferenceSession | None = None

    def __call__(self, model: onnx.ModelProto, feeds: Feeds) -> Feeds:
        if model is not self.model or self.session is None:
            self.model, self.session = model, onnxruntime_session(serialized(model))
        return outputs(self.session, feeds)


class Reader(ortq.CalibrationDataReader):
    """onnxruntime's calibration reader over a fixed list of feeds."""

    def __init__(self, feeds: list[Feeds]) -> None:
        self.feeds = iter(feeds)

    def get_next(self) -> Feeds | None:
        return next(self.feeds, None)


def load_case(name: str, calibration: int, held_out: int, seq: int) -> Case:
    if name == "transformer-384x6":
        model = tiny_transformer(hidden=384, layers=6)

        def inputs(seed: int) -> Feeds:
            return {"tokens": np.random.default_rng(seed).standard_normal((1, seq, 384)).astype(np.float32)}
    else:
        model = check_model(load_model(samples.path(name)).model, name)

        def inputs(seed: int) -> Feeds:
            return samples.feeds(name, seed)
    if model.opset_import[0].version < INT8_OPSET:
        model = version_converter.convert_version(model, INT8_OPSET)
    return Case(name, slim(model)[0], [inputs(CALIBRATION_SEED + i) for i in range(calibration)],
                [inputs(seed) for seed in range(held_out)])


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Silence the quantizers' prints, warnings and log lines."""
    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def fp32(case: Case) -> bytes:
    return serialized(case.model)


def ep_weight_only(case: Case) -> bytes:
    return serialized(quantize(case.model, "int8").model)


def ep_weight_only_calibrated(case: Case) -> bytes:
    return serialized(quantize(case.model, "int8", calibration=Calibration(case.calibration, OnnxruntimeRun())).model)


def never_slower(case: Case, form: str, calibration: Calibration | None) -> bytes:
    """edgepack's int8 compute as a generic build ships it (`edgepack.tune.choose_int8_compute`): classes measured
    slower on onnxruntime stay fp32, and a model not faster as a whole keeps fp32 compute on int8 weights."""

    def lower(keep: frozenset[str], activations: str = "int8") -> QuantizeResult:
        return quantize(case.model, "int8", keep, activations=activations, calibration=calibration)

    lowered = lower(frozenset())
    choice = choose_int8_compute(case.model, lowered, lower, frozenset(), TARGETS["generic"].runtime, form,
                                 case.held_out[0], False)
    return serialized(lower(frozenset(), "fp32").model if choice.fp32_compute else lower(choice.slower).model)


def ep_dynamic(case: Case) -> bytes:
    return never_slower(case, "dynamic", None)


def ep_static(case: Case) -> bytes:
    return never_slower(case, "static", Calibration(case.calibration, OnnxruntimeRun(), "minmax"))


def ep_static_int8_compute(case: Case) -> bytes:
    calibration = Calibration(case.calibration, OnnxruntimeRun(), "minmax")
    return serialized(quantize(case.model, "int8", activations="int8", calibration=calibration).model)


def ort_quantized(case: Case, lower: Callable[[Path, Path], None]) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "fp32.onnx", Path(folder) / "int8.onnx"
        source.write_bytes(serialized(case.model))
        lower(source, target)
        return target.read_bytes()


def ort_dynamic(case: Case) -> bytes:
    return ort_quantized(case, lambda source, target: ortq.quantize_dynamic(
        source, target, per_channel=True, weight_type=ortq.QuantType.QInt8))


def ort_static(case: Case, reduce_range: bool = False) -> bytes:
    return ort_quantized(case, lambda source, target: ortq.quantize_static(
        source, target, Reader(case.calibration), quant_format=ortq.QuantFormat.QDQ, per_channel=True,
        reduce_range=reduce_range, activation_type=ortq.QuantType.QUInt8, weight_type=ortq.QuantType.QInt8,
        calibrate_method=ortq.CalibrationMethod.MinMax))


def ort_static_reduce_range(case: Case) -> bytes:
    return ort_static(case, reduce_range=True)


VARIANTS: dict[str, Callable[[Case], bytes]] = {
    "fp32": fp32,
    "ep weight-only": ep_weight_only,
    "ep weight-only calibrated": ep_weight_only_calibrated,
    "ep dynamic": ep_dynamic,
    "ep static": ep_static,
    "ep static int8 compute": ep_static_int8_compute,
    "ort dynamic": ort_dynamic,
    "ort static": ort_static,
    "ort static reduce_range": ort_static_reduce_range,
}
EDGEPACK = ("ep weight-only", "ep weight-only calibrated", "ep dynamic", "ep static")


def reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:90]


def build(case: Case, variant: str) -> Row:
    row = Row(variant)
    try:
        with quietly():
            row.model = VARIANTS[variant](case)
    except Exception as exc:  # a quantizer failing on a model is a result to report
        row.error = f"quantize: {reason(exc)}"
        return row
    try:
        row.session = onnxruntime_session(row.model)
    except Exception as exc:  # so is a runtime refusing the quantized model
        row.error = f"session: {reason(exc)}"
    return row


def fidelity(case: Case, rows: list[Row]) -> None:
    """Mean cosine and top-1 agreement of each variant's outputs against fp32's over the held-out inputs."""
    reference = next(r for r in rows if r.variant == "fp32")
    assert reference.session is not None
    expected = [outputs(reference.session, feeds) for feeds in case.held_out]
    for row in rows:
        if row.session is None:
            continue
        try:
            scores = [compare(want[name], got[name]) for feeds, want in zip(case.held_out, expected)
                      for got in [outputs(row.session, feeds)] for name in want]
        except Exception as exc:  # a session that loads may still fail to run
            row.error, row.session = f"run: {reason(exc)}", None
            continue
        row.cosine = statistics.fmean(s["cosine"] for s in scores)
        if case.name in TOP1:
            row.top1 = statistics.fmean(s["top1_agreement"] for s in scores)


def time_blocks(rows: list[Row], feeds: Feeds, blocks: int, runs: int, warmup: int) -> None:
    """Seconds of each call per running variant; blocks of `runs` calls rotate over the variants, the order shifted
    by one every block. Every block runs a fresh session, first called `warmup` times: two sessions of one model can
    differ by a third in speed for as long as they live, which interleaving alone does not average out."""
    timed = [row for row in rows if row.session is not None]
    for row in timed:
        row.times = []
    for block in range(blocks):
        for row in timed[block % len(timed):] + timed[:block % len(timed)]:
            assert row.model is not None and row.times is not None
            fresh = onnxruntime_session(row.model)
            for _ in range(warmup):
                outputs(fresh, feeds)
            gc.collect()
            for _ in range(runs):
                start = time.perf_counter()
                outputs(fresh, feeds)
                row.times.append(time.perf_counter() - start)


def block_ratios(row: Row, reference: Row, runs: int) -> list[float]:
    assert row.times is not None and reference.times is not None
    return [statistics.median(row.times[i:i + runs]) / statistics.median(reference.times[i:i + runs])
            for i in range(0, len(row.times), runs)]


def verdict(spread: list[float]) -> str:
    """faster or slower where every block says so, else within the machine's noise."""
    if max(spread) < 1.0:
        return "faster"
    return "slower" if min(spread) > 1.0 else "within noise"


def report(console: Console, case: Case, rows: list[Row], runs: int) -> None:
    reference = next(r for r in rows if r.variant == "fp32")
    assert reference.model is not None and reference.times is not None
    fp32_ms = statistics.median(reference.times) * 1000
    table = Table(title=f"{case.name} on onnxruntime, 1 thread", title_justify="left",
                  caption=f"fidelity on {len(case.held_out)} held-out inputs; {len(case.calibration)} calibration "
                          "samples", caption_justify="left")
    for column in ("variant", "bytes", "x fp32", "median ms", "x fp32 (block range)", "cosine", "top-1", "note"):
        table.add_column(column, justify="left" if column in ("variant", "note") else "right")
    verdicts = []
    for row in rows:
        if row.model is None:
            table.add_row(row.variant, "-", "-", "-", "-", "-", "-", row.error)
            continue
        size = f"{len(row.model):,}"
        size_ratio = f"{len(row.model) / len(reference.model):.2f}"
        if row.times is None or row.session is None:
            table.add_row(row.variant, size, size_ratio, "-", "-", "-", "-", row.error)
            continue
        ms = statistics.median(row.times) * 1000
        spread = block_ratios(row, reference, runs)
        table.add_row(row.variant, size, size_ratio, f"{ms:.3f}",
                      f"{ms / fp32_ms:.2f} ({min(spread):.2f}-{max(spread):.2f})", f"{row.cosine:.5f}",
                      "-" if row.top1 is None else f"{row.top1:.3f}", row.error or "")
        if row.variant in EDGEPACK:
            verdicts.append(f"{row.variant.removeprefix('ep ')} {ms / fp32_ms:.2f}x ({verdict(spread)})")
    console.print(table)
    failed = [row.variant.removeprefix("ep ") for row in rows if row.variant in EDGEPACK and row.times is None]
    console.print(f"{case.name}: edgepack int8 vs fp32 on onnxruntime (median latency ratio): "
                  + ", ".join(verdicts + [f"{name} failed" for name in failed]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(MODELS), help=f"models (default: {' '.join(MODELS)})")
    parser.add_argument("--blocks", type=int, default=9, help="timing blocks over all variants (default: 9)")
    parser.add_argument("--runs", type=int, default=10, help="timed calls per variant and block (default: 10)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls per variant first (default: 3)")
    parser.add_argument("--calibration", type=int, default=32, help="calibration samples (default: 32)")
    parser.add_argument("--held-out", type=int, default=50, help="held-out inputs for fidelity (default: 50)")
    parser.add_argument("--seq", type=int, default=16, help="transformer sequence length (default: 16)")
    args = parser.parse_args()

    console = Console(width=200)
    for name in args.names:
        case = load_case(name, args.calibration, args.held_out, args.seq)
        rows = [build(case, variant) for variant in VARIANTS]
        fidelity(case, rows)
        time_blocks(rows, case.held_out[0], args.blocks, args.runs, args.warmup)
        report(console, case, rows, args.runs)


if __name__ == "__main__":
    main()
