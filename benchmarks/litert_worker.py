"""LiteRT's side of `cpu_vs_litert.py`, run by the Python of the LiteRT environment (TensorFlow pins older numpy and
onnx than edgepack's).

    litert_worker.py convert ONNX DIR       onnx2tf to DIR/<stem>_float32.tflite; prints {"tflite": PATH} or
                                            {"error": ...}. A process of its own, so that TensorFlow (6 to 8 GB
                                            resident after the corpus's conversions) stays out of the timed worker
    litert_worker.py                        serves one JSON request a line on stdin, one JSON answer a line on stdout:

    {"outputs": TFLITE, "feeds": NPZ, "to": NPZ}
                                            one call; its outputs, in the ONNX model's order, saved to NPZ -> {}
    {"block": TFLITE, "feeds": NPZ, "warmup": W, "runs": N}
                                            a fresh interpreter, W calls untimed, then N -> {"seconds": [...]}

Interpreters run on one thread with LiteRT's default delegate for float models (XNNPACK). NCHW feeds are transposed
to the NHWC inputs onnx2tf makes, once, outside the timed calls; a timed call sets the inputs, invokes and copies
the outputs out, as the other sides' calls take feeds and return outputs."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def convert(source: str, folder: str) -> dict[str, str]:
    import onnx2tf
    from onnx2tf import onnx2tf as converter

    # onnx2tf fetches sample images from GitHub for models whose inputs are all 3-channel images; the benchmark
    # reaches no host but the package registries, and the images only feed its own accuracy check
    converter.download_test_image_data = lambda: np.random.default_rng(0).random((20, 128, 128, 3), np.float32)
    onnx2tf.convert(input_onnx_file_path=source, output_folder_path=folder, non_verbose=True)
    return {"tflite": str(Path(folder) / f"{Path(source).stem}_float32.tflite")}


def interpreter(path: str):  # noqa: ANN201  (ai_edge_litert's Interpreter)
    from ai_edge_litert.interpreter import Interpreter

    model = Interpreter(model_path=path, num_threads=1)
    model.allocate_tensors()
    return model


def laid_out(value: np.ndarray, shape: list[int]) -> np.ndarray:
    """`value` as a tensor of `shape`: itself, or channels moved last (NCHW to NHWC, NCW to NWC)."""
    if list(value.shape) == shape:
        return value
    moved = np.moveaxis(value, 1, -1) if value.ndim >= 3 else value
    if list(moved.shape) != shape:
        raise ValueError(f"a feed of shape {list(value.shape)} fits no LiteRT input layout {shape}")
    return np.ascontiguousarray(moved)


def laid_out_feeds(model, feeds: dict[str, np.ndarray]) -> list[tuple[int, np.ndarray]]:  # noqa: ANN001
    """(input index, value) for each input: the feed of its name (onnx2tf keeps the ONNX names), else the feed in
    its place, in the input's layout and dtype."""
    ordered = list(feeds.values())
    laid = []
    for index, detail in enumerate(model.get_input_details()):
        name = detail["name"].removeprefix("serving_default_").split(":")[0]
        value = feeds.get(name, ordered[index])
        laid.append((detail["index"], laid_out(value.astype(detail["dtype"]), list(detail["shape"]))))
    return laid


def call(model, inputs: list[tuple[int, np.ndarray]], outputs: list[int]) -> list[np.ndarray]:  # noqa: ANN001
    """One call as an app makes it: inputs set, the model invoked, the outputs copied out."""
    for index, value in inputs:
        model.set_tensor(index, value)
    model.invoke()
    return [model.get_tensor(index) for index in outputs]


def output_order(detail: dict) -> int:
    """onnx2tf names the model's outputs Identity, Identity_1, ... in the ONNX model's order."""
    found = re.search(r"Identity_(\d+)", detail["name"])
    return int(found.group(1)) if found else 0


def outputs(path: str, feeds_path: str, to: str) -> dict[str, str]:
    model = interpreter(path)
    details = sorted(model.get_output_details(), key=output_order)
    np.savez(to, *call(model, laid_out_feeds(model, dict(np.load(feeds_path))), [d["index"] for d in details]))
    return {}


def block(path: str, feeds_path: str, warmup: int, runs: int) -> dict[str, list[float]]:
    model = interpreter(path)
    inputs = laid_out_feeds(model, dict(np.load(feeds_path)))
    outputs = [detail["index"] for detail in model.get_output_details()]
    for _ in range(warmup):
        call(model, inputs, outputs)
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        call(model, inputs, outputs)
        seconds.append(time.perf_counter() - start)
    return {"seconds": seconds}


def answer(request: dict) -> dict:
    if "outputs" in request:
        return outputs(request["outputs"], request["feeds"], request["to"])
    return block(request["block"], request["feeds"], request["warmup"], request["runs"])


def guarded(work: Callable[[], dict]) -> dict:
    try:
        return work()
    except Exception as error:  # noqa: BLE001  (any failure of onnx2tf or LiteRT is the model's answer)
        lines = str(error).strip().splitlines()
        return {"error": f"{type(error).__name__}: {lines[0] if lines else ''}"}


def main() -> None:
    # answers go to the original stdout; whatever onnx2tf and TensorFlow print (from Python or C) goes to stderr
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    if sys.argv[1:2] == ["convert"]:
        replies.write(json.dumps(guarded(lambda: convert(sys.argv[2], sys.argv[3]))) + "\n")
        return
    for line in sys.stdin:
        replies.write(json.dumps(guarded(lambda: answer(json.loads(line)))) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
