"""Is int8 faster than fp32? Per op class and runtime, edgepack's int8 forms against the fp32 model.

    python benchmarks/int8_speed.py [--write] [--blocks 11] [--block-ms 100] [--warmup 5] [--seed 0]

Op classes, each a single-op ONNX model (opset 17, random weights from --seed, input "x" standard normal):

    Conv              3x3, 64 -> 64 channels, 56x56, pads 1, bias, then Relu
    DepthwiseConv     3x3, group = C = 96, 56x56, pads 1, bias
    PointwiseConv     1x1, 96 -> 192 channels, 28x28, bias
    MatMul            [1, 128, 384] x [384, 1536] weight
    Gemm              [1, 1280] x [1280, 1000] weight, transB = 0, bias
    InvertedResidual  a small chain, so that QDQ fusion has neighbours: MobileNetV2's block at 56x56,
                      1x1 24 -> 144 + Relu, 3x3 depthwise 144 + Relu, 1x1 144 -> 24, Add the input

Forms, made by edgepack's quantize from the fp32 model: `static` (quantize(m, "int8", activations="int8",
calibration=...), ranges from 8 standard-normal inputs run through onnxruntime), `dynamic` (quantize(m, "int8",
activations="int8"): MatMul/Gemm only, Conv stays float) and `weight_only` (quantize(m, "int8")). A form applies
to an op class when quantize changes it that way (static: a QuantizeLinear, dynamic: a MatMulInteger,
weight_only: a DequantizeLinear); one that does not apply is not measured.

Runtimes: onnxruntime (CPU, 1 intra- and 1 inter-op thread, ORT_ENABLE_ALL, plus the session settings the generic
bundle records: `session.disable_quant_qdq` for weight_only, so that its DequantizeLinear folds at load) and
OpenVINO (ONNX read from bytes, compiled for the CPU with f32 inference precision, 1 thread, LATENCY hint). Per
(runtime, op class) the variants are timed in 11 (--blocks) blocks of N calls that rotate over the variants, the
order shifted every block; N gives a block about --block-ms. Each block runs a fresh session / compiled model, first
called --warmup times untimed (two instances of one model can differ by a third in speed for their whole life on
this machine). A variant's latency is the median of its block medians; the ratio is int8 / fp32, below 1 means the
int8 form is faster. The range of per-block ratios shows the noise.
"ran as" names what executed: onnxruntime's op types after its graph optimizations (`optimized_model_filepath`),
OpenVINO's compiled layers with their runtime precision (Input, Output, Const, Reorder, Reshape left out).

Without --write the TOML table is printed; with --write it is written to packager/quantize/int8_speed.toml, where
this CPU kind's sections are replaced and other kinds' kept (a build uses the slowest kind's ratios).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import statistics
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from onnx import TensorProto, helper, numpy_helper
from rich.console import Console
from rich.table import Table

from edgepack.packager.quantize import Calibration, quantize
from edgepack.targets.generic import onnxruntime_session

Feeds = dict[str, np.ndarray]
Call = Callable[[], object]
OPSET = 17
CALIBRATION_SAMPLES = 8
TABLE = Path(__file__).resolve().parents[1] / "packager" / "quantize" / "int8_speed.toml"
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1, "PERFORMANCE_HINT": "LATENCY"}
OV_HIDDEN = {"Input", "Output", "Const", "Reorder", "Reshape"}
FORMS = ("static", "dynamic", "weight_only")
MARKS = {"static": "QuantizeLinear", "dynamic": "MatMulInteger", "weight_only": "DequantizeLinear"}
"""The op whose presence shows that quantize lowered the model in that form."""
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
"""CPU features that decide how fast int8 kernels can be."""
INT8_KINDS = ("amx_int8", "avx512_vnni", "avx_vnni", "avx2")
"""The table's CPU kinds, best int8 instruction set first (without VNNI, uint8 x int8 goes through vpmaddubsw)."""


@dataclass(frozen=True)
class OpModel:
    model: onnx.ModelProto
    shape: tuple[int, ...]
    """Of input "x"."""


def weight(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def bias(rng: np.random.Generator, size: int) -> np.ndarray:
    return (rng.standard_normal(size) * 0.1).astype(np.float32)


def single(nodes: list[onnx.NodeProto], weights: dict[str, np.ndarray], shape: tuple[int, ...],
           output: tuple[int, ...]) -> OpModel:
    graph = helper.make_graph(nodes, "op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, output)],
                              [numpy_helper.from_array(value, name) for name, value in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return OpModel(model, shape)


def conv(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    return single(nodes, {"w": weight(rng, (64, 64, 3, 3), 576), "b": bias(rng, 64)}, (1, 64, 56, 56),
                  (1, 64, 56, 56))


def depthwise_conv(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], group=96)]
    return single(nodes, {"w": weight(rng, (96, 1, 3, 3), 9), "b": bias(rng, 96)}, (1, 96, 56, 56),
                  (1, 96, 56, 56))


def pointwise_conv(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"])]
    return single(nodes, {"w": weight(rng, (192, 96, 1, 1), 96), "b": bias(rng, 192)}, (1, 96, 28, 28),
                  (1, 192, 28, 28))


def matmul(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
    return single(nodes, {"w": weight(rng, (384, 1536), 384)}, (1, 128, 384), (1, 128, 1536))


def gemm(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=0)]
    return single(nodes, {"w": weight(rng, (1280, 1000), 1280), "b": bias(rng, 1000)}, (1, 1280), (1, 1000))


def inverted_residual(rng: np.random.Generator) -> OpModel:
    nodes = [helper.make_node("Conv", ["x", "expand.w", "expand.b"], ["e"]),
             helper.make_node("Relu", ["e"], ["er"]),
             helper.make_node("Conv", ["er", "dw.w", "dw.b"], ["d"], pads=[1, 1, 1, 1], group=144),
             helper.make_node("Relu", ["d"], ["dr"]),
             helper.make_node("Conv", ["dr", "project.w", "project.b"], ["p"]),
             helper.make_node("Add", ["p", "x"], ["y"])]
    weights = {"expand.w": weight(rng, (144, 24, 1, 1), 24), "expand.b": bias(rng, 144),
               "dw.w": weight(rng, (144, 1, 3, 3), 9), "dw.b": bias(rng, 144),
               "project.w": weight(rng, (24, 144, 1, 1), 144), "project.b": bias(rng, 24)}
    return single(nodes, weights, (1, 24, 56, 56), (1, 24, 56, 56))


OPS: dict[str, Callable[[np.random.Generator], OpModel]] = {
    "Conv": conv,
    "DepthwiseConv": depthwise_conv,
    "PointwiseConv": pointwise_conv,
    "MatMul": matmul,
    "Gemm": gemm,
    "InvertedResidual": inverted_residual,
}


def serialized(model: onnx.ModelProto) -> bytes:
    """`model` as onnxruntime 1.31 and OpenVINO read it (IR 10; onnx 1.23 writes IR 14)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.ir_version = 10
    return copy.SerializeToString()


def calibration_run(model: onnx.ModelProto, feeds: Feeds) -> Feeds:
    session = onnxruntime_session(serialized(model))
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def forms(op: OpModel, rng: np.random.Generator) -> dict[str, onnx.ModelProto]:
    """edgepack's int8 forms of `op` that apply to it, by form name."""
    samples = [{"x": rng.standard_normal(op.shape).astype(np.float32)} for _ in range(CALIBRATION_SAMPLES)]
    made = {"static": quantize(op.model, "int8", activations="int8",
                               calibration=Calibration(samples, calibration_run, "minmax")).model,
            "dynamic": quantize(op.model, "int8", activations="int8").model,
            "weight_only": quantize(op.model, "int8").model}
    return {form: model for form, model in made.items()
            if any(node.op_type == MARKS[form] for node in model.graph.node)}


def counted(names: list[str]) -> str:
    return ", ".join(f"{name}" if count == 1 else f"{name} x{count}" for name, count in Counter(names).items())


def on_onnxruntime(model: bytes, feeds: Feeds) -> tuple[Callable[[], Call], str]:
    """What makes a fresh onnxruntime session of `model` (as a call that runs it once), and the op types it runs
    after graph optimization."""
    with tempfile.TemporaryDirectory() as folder:
        optimized = Path(folder) / "optimized.onnx"
        onnxruntime_session(model, optimized)
        ran = counted([node.op_type for node in onnx.load(optimized).graph.node])

    def make() -> Call:
        session = onnxruntime_session(model)
        return lambda: session.run(None, feeds)

    return make, ran


def on_openvino(model: bytes, feeds: Feeds) -> tuple[Callable[[], Call], str]:
    """What compiles `model` afresh on OpenVINO (as a call that runs it once), and the layers it compiles, with
    their runtime precision."""
    core = ov.Core()
    source = core.read_model(model)
    compiled = core.compile_model(source, "CPU", OV_CONFIG)
    layers = [op.get_rt_info() for op in compiled.get_runtime_model().get_ordered_ops()]
    ran = counted([f"{info['layerType'].astype(str)}:{info['runtimePrecision'].astype(str)}" for info in layers
                   if info["layerType"].astype(str) not in OV_HIDDEN])

    def make() -> Call:
        request = core.compile_model(source, "CPU", OV_CONFIG).create_infer_request()
        return lambda: request.infer(feeds)

    return make, ran


RUNTIMES: dict[str, Callable[[bytes, Feeds], tuple[Callable[[], Call], str]]] = {
    "onnxruntime": on_onnxruntime,
    "openvino": on_openvino,
}


@dataclass
class Variant:
    form: str
    make: Callable[[], Call] | None = None
    """A fresh session or compiled model, as a call: each timing block gets its own (see `time_blocks`)."""
    ran: str = ""
    error: str = ""
    blocks: list[float] | None = None
    """Median seconds per call, one per block."""


def prepare(runtime: str, models: dict[str, onnx.ModelProto], feeds: Feeds) -> list[Variant]:
    variants = []
    for form, model in models.items():
        variant = Variant(form)
        try:
            variant.make, variant.ran = RUNTIMES[runtime](serialized(model), feeds)
        except Exception as exc:  # a runtime refusing a form is a result to report
            lines = str(exc).strip().splitlines()
            variant.error = f"{type(exc).__name__}: {lines[0] if lines else ''}"[:100]
        variants.append(variant)
    return variants


def seconds_per_call(call: Call, warmup: int) -> float:
    times = []
    for _ in range(warmup):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_blocks(variants: list[Variant], blocks: int, block_s: float, warmup: int) -> None:
    """Each running variant's median per block; blocks of N calls rotate over the variants, order shifted every
    block; N from the slowest variant's warmup so that a block takes about `block_s`. Every block runs a fresh
    session or compiled model: two instances of one model can differ by a third in speed for as long as they live
    (where their buffers landed), which interleaving alone does not average out."""
    timed = [v for v in variants if v.make is not None]
    slowest = max(seconds_per_call(v.make(), warmup) for v in timed)
    runs = max(3, round(block_s / slowest))
    for variant in timed:
        variant.blocks = []
    for block in range(blocks):
        for variant in timed[block % len(timed):] + timed[:block % len(timed)]:
            call = variant.make()
            seconds_per_call(call, warmup)
            gc.collect()
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
            variant.blocks.append(statistics.median(times))


def ratios(variants: list[Variant]) -> dict[str, tuple[float, float, float]]:
    """form -> (int8 / fp32 ratio of the medians of block medians, lowest and highest per-block ratio)."""
    fp32 = next(v for v in variants if v.form == "fp32")
    if fp32.blocks is None:
        return {}
    reference = statistics.median(fp32.blocks)
    return {v.form: (statistics.median(v.blocks) / reference,
                     min(a / b for a, b in zip(v.blocks, fp32.blocks)),
                     max(a / b for a, b in zip(v.blocks, fp32.blocks)))
            for v in variants if v.form != "fp32" and v.blocks is not None}


def cpu() -> tuple[str, list[str]]:
    """The CPU's model name and which of ISA_FLAGS it has, from /proc/cpuinfo."""
    fields = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return fields.get("model name", "unknown"), [flag for flag in ISA_FLAGS if flag in flags]


def cpu_kind(flags: list[str]) -> str:
    """The table section a CPU's measurements go under: the best of INT8_KINDS it has."""
    return next((kind for kind in INT8_KINDS if kind in flags), "baseline")


def toml_text(results: dict[str, dict[str, dict[str, tuple[float, float, float]]]], blocks: int,
              existing: str) -> str:
    """The table with this CPU kind's sections from `results`, and the other kinds' sections kept from `existing`."""
    model, flags = cpu()
    kind = cpu_kind(flags)
    header = [
        "# int8 / fp32 latency of edgepack's int8 forms, per runtime, CPU kind and op class. A build uses the slowest",
        "# kind's ratio (a bundle's device is unknown at build time). `benchmarks/int8_speed.py --write` replaces the",
        "# sections of the kind it runs on and keeps the others. A CPU's kind is the best int8 instruction set it has,",
        f"# of {', '.join(INT8_KINDS)}.",
        "# A ratio is the int8 form's median latency over the fp32 model's, same runtime and input, medians of",
        f"# {blocks} interleaved blocks, 1 thread: below 1 the int8 form is faster, above 1 slower.",
        "# onnxruntime: CPUExecutionProvider, ORT_ENABLE_ALL; openvino: CPU, f32 inference precision, LATENCY.",
        "# static: calibrated uint8 QDQ around Conv/MatMul/Gemm; dynamic: DynamicQuantizeLinear + MatMulInteger",
        "# (MatMul/Gemm only); weight_only: int8 weights per output channel, fp32 compute (onnxruntime with",
        "# session.disable_quant_qdq = 1, as the generic bundle's manifest asks).",
        "# A form that does not apply to the op class, or that the runtime failed to compile, has no key.",
        "# Op classes are single-op models at edge sizes: Conv 3x3 64->64 56x56 + Relu, DepthwiseConv 3x3 C=96",
        "# 56x56, PointwiseConv 1x1 96->192 28x28, MatMul [1,128,384]x[384,1536], Gemm [1,1280]x[1280,1000];",
        "# InvertedResidual is MobileNetV2's block (1x1 24->144, 3x3 depthwise, 1x1 144->24, residual Add) at 56x56.",
    ]
    versions = {"onnxruntime": f"onnxruntime {ort.__version__}", "openvino": f"openvino {ov.__version__.split('-')[0]}"}
    sections = {name: text for name, text in table_sections(existing).items() if name.partition(".")[2] != kind}
    for runtime, ops in results.items():
        lines = [f"# {model} ({', '.join(flags) or 'none of ' + ', '.join(INT8_KINDS)}), "
                 f"{datetime.date.today().isoformat()}, {versions[runtime]}", f"[{runtime}.{kind}]"]
        for op, measured in ops.items():
            keys = ", ".join(f"{form} = {measured[form][0]:.2f}" for form in FORMS if form in measured)
            lines.append(f"{op} = {{ {keys} }}")
        sections[f"{runtime}.{kind}"] = "\n".join(lines)
    return "\n".join(header) + "\n\n" + "\n\n".join(sections[name] for name in sorted(sections)) + "\n"


def table_sections(text: str) -> dict[str, str]:
    """`[runtime.kind]` -> that section's text, with the comment lines right above its header."""
    sections: dict[str, str] = {}
    for block in text.strip().split("\n\n"):
        header = next((line for line in block.splitlines() if line.startswith("[")), None)
        if header is not None:
            sections[header.strip("[]")] = block
    return sections


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table to packager/quantize/int8_speed.toml")
    parser.add_argument("--blocks", type=int, default=11, help="interleaved timing blocks (default: 11)")
    parser.add_argument("--block-ms", type=float, default=100.0, help="about how long a block of calls takes")
    parser.add_argument("--warmup", type=int, default=5, help="untimed calls per variant first (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights, calibration and input (default: 0)")
    args = parser.parse_args()

    table = Table(title="int8 / fp32 latency, 1 thread (median of block medians; block range = noise)",
                  title_justify="left")
    for column in ("runtime", "op", "form", "fp32 ms", "int8 ms", "int8/fp32 (block range)", "ran as"):
        table.add_column(column, justify="right" if "ms" in column or "/" in column else "left")
    results: dict[str, dict[str, dict[str, tuple[float, float, float]]]] = {runtime: {} for runtime in RUNTIMES}
    for op, build in OPS.items():
        rng = np.random.default_rng(args.seed)
        model = build(rng)
        models = {"fp32": model.model, **forms(model, rng)}
        feeds = {"x": rng.standard_normal(model.shape).astype(np.float32)}
        for runtime in RUNTIMES:
            variants = prepare(runtime, models, feeds)
            if variants[0].make is not None:
                time_blocks(variants, args.blocks, args.block_ms / 1000, args.warmup)
            measured = ratios(variants)
            results[runtime][op] = measured
            fp32_ms = f"{statistics.median(variants[0].blocks) * 1000:.3f}" if variants[0].blocks else "-"
            for variant in variants:
                if variant.form in measured:
                    ratio, low, high = measured[variant.form]
                    cells = [f"{statistics.median(variant.blocks) * 1000:.3f}",
                             f"{ratio:.2f} ({low:.2f}-{high:.2f})"]
                elif variant.form == "fp32" and variant.blocks:
                    cells = ["-", "1.00"]
                else:
                    cells = ["-", "-"]
                table.add_row(runtime, op, variant.form, fp32_ms, *cells, variant.error or variant.ran)
            table.add_section()
    console = Console(width=200)
    console.print(table)
    text = toml_text(results, args.blocks, TABLE.read_text(encoding="utf-8") if TABLE.exists() else "")
    if args.write:
        TABLE.write_text(text, encoding="utf-8")
        tomllib.loads(TABLE.read_text(encoding="utf-8"))
        console.print(f"wrote {TABLE}")
    else:
        console.print(text, markup=False, highlight=False)


if __name__ == "__main__":
    main()
