"""A model over 2 GB with external data: built for `generic` and run with its weights mapped, never copied.

    python benchmarks/large_model.py [--layers 9] [--width 8192] [--work DIR]

Writes an MLP of `--layers` MatMul + Add + Relu blocks with `--width` x `--width` fp32 weights (9 x 8192: 2.42 GB)
in an external data file, streamed to disk a layer at a time. Then, each in its own process, whose peak resident
memory (ru_maxrss, from wait4) is printed beside the weight bytes:
- `edgepack build big.onnx --profile generic` (slim, oracle on `reference`, onnxruntime's check, bundle, verify);
- the bundle run once on `Session` (the `reference` provider, weights mapped);
- onnxruntime on the source model, for its outputs and as the peer's figure.
The verdict: the build's peak under 1.5x the weight bytes, and the bundle's outputs within 1e-4 (relative to their
scale) of onnxruntime's. Prints the CPU it ran on."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from edgepack.devices.local import cpu_model
from edgepack.runtime.external_weights import point_to

LIMIT = 1.5
"""The build's peak resident memory, as a multiple of the weight bytes."""
TOLERANCE = 1e-4


def write_model(folder: Path, layers: int, width: int) -> int:
    """The MLP as `folder/big.onnx` and `big.onnx.data`; returns the weight bytes."""
    rng = np.random.default_rng(0)
    nodes, weights, value = [], [], "x"
    position = 0
    with open(folder / "big.onnx.data", "wb") as data:
        for layer in range(layers):
            matrix = rng.standard_normal((width, width), dtype=np.float32) / np.float32(np.sqrt(width))
            tensor = TensorProto(name=f"w{layer}", data_type=TensorProto.FLOAT, dims=[width, width])
            point_to(tensor, "big.onnx.data", position, matrix.nbytes)
            matrix.tofile(data)
            position += matrix.nbytes
            del matrix
            bias = helper.make_tensor(f"b{layer}", TensorProto.FLOAT, [width],
                                      (rng.standard_normal(width) * 0.1).astype(np.float32))
            weights += [tensor, bias]
            last = layer == layers - 1
            nodes += [helper.make_node("MatMul", [value, f"w{layer}"], [f"m{layer}"]),
                      helper.make_node("Add", [f"m{layer}", f"b{layer}"], [f"a{layer}"]),
                      helper.make_node("Identity" if last else "Relu", [f"a{layer}"], [f"h{layer}"])]
            value = f"h{layer}"
    graph = helper.make_graph(nodes, "large_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, [1, width])], weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9),
              folder / "big.onnx")
    return position


def child(argv: list[str]) -> tuple[float, float, str]:
    """Run `argv`; its peak resident memory in GB, its seconds, and its output (raises if it fails)."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed ({process.returncode}):\n{output[-3000:]}")
    return usage.ru_maxrss / 2**20, time.perf_counter() - start, output


RUN_BUNDLE = """
import sys, numpy as np
from edgepack.runtime import Session
session = Session(sys.argv[1])
np.save(sys.argv[3], session.run({"x": np.load(sys.argv[2])})[session.outputs[0].name])
"""
RUN_ONNXRUNTIME = """
import sys, numpy as np, onnxruntime as ort
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
np.save(sys.argv[3], session.run(None, {"x": np.load(sys.argv[2])})[0])
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=9)
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--work", type=Path, help="folder for the model and bundle (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="edgepack-large-", dir=args.work) as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        weight_bytes = write_model(folder, args.layers, args.width)
        print(f"CPU: {cpu_model()}")
        print(f"model: {args.layers} x MatMul {args.width}x{args.width} fp32, weights {weight_bytes / 1e9:.2f} GB in "
              f"external data (written in {time.perf_counter() - start:.0f} s)", flush=True)
        feeds = folder / "x.npy"
        np.save(feeds, np.random.default_rng(1).standard_normal((1, args.width)).astype(np.float32))
        build_gb, build_s, log = child([sys.executable, "-m", "edgepack", "build", str(folder / "big.onnx"),
                                        "--profile", "generic", "-o", str(folder / "dist")])
        bundle = folder / "dist" / "big-generic"
        files = {p.name: p.stat().st_size for p in bundle.iterdir()}
        run_gb, run_s, _ = child([sys.executable, "-c", RUN_BUNDLE, str(bundle), str(feeds), str(folder / "ours.npy")])
        ort_gb, ort_s, _ = child([sys.executable, "-c", RUN_ONNXRUNTIME, str(folder / "big.onnx"), str(feeds),
                                  str(folder / "theirs.npy")])
        ours, theirs = np.load(folder / "ours.npy"), np.load(folder / "theirs.npy")
    weights_gb = weight_bytes / 2**30
    diff = float(np.max(np.abs(ours - theirs))) / max(1.0, float(np.max(np.abs(theirs))))
    verify = next((line.strip() for line in log.splitlines() if line.strip().startswith("verify")), "")
    print(f"bundle: {', '.join(f'{name} {size / 1e9:.3f} GB' for name, size in sorted(files.items()))}")
    print(f"build's {verify[:110]}")
    print(f"{'':34}{'peak RSS':>10}{'x weights':>11}{'seconds':>9}")
    for label, gb, seconds in (("edgepack build --profile generic", build_gb, build_s),
                               ("bundle run on Session (mapped)", run_gb, run_s),
                               ("onnxruntime on the source", ort_gb, ort_s)):
        print(f"{label:34}{gb:9.2f}G{gb / weights_gb:10.2f}x{seconds:9.1f}")
    passed = build_gb < LIMIT * weights_gb and diff <= TOLERANCE
    print(f"bundle vs onnxruntime: max abs diff {diff:.2e} of the output's scale (tolerance {TOLERANCE:g})")
    print(f"{'PASS' if passed else 'FAIL'}: build peak {build_gb / weights_gb:.2f}x the weights (limit {LIMIT}x)")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
