"""Every onnx node case the `cpu` provider claims, lowered to an `.epk` plan and run by `ep_run` built with
AddressSanitizer and UndefinedBehaviorSanitizer; any sanitizer report or failed run is listed.

    python fuzz/node_cases_asan.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx.backend.test.loader import load_model_tests

from edgepack.compiler.lower import NeedsValues, lower
from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.native.build import runner
from edgepack.runtime.providers import PROVIDERS


def plan_for(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> bytes:
    """The case's plan at its input shapes, for the values of the inputs that shape other tensors."""
    shapes = {name: value.shape for name, value in feeds.items()}
    values: dict[str, np.ndarray] = {}
    while True:
        try:
            return lower(model, shapes, values)
        except NeedsValues as needed:
            values.update({name: feeds[name] for name in needed.names})


def main() -> int:
    binary = runner(sanitized=True)
    capability = PROVIDERS["cpu"].capability
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the case generators warn about overflows they test on purpose
        cases = load_model_tests(kind="node")
    clean, problems = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for case in cases:
            model = onnx.shape_inference.infer_shapes(case.model)
            if capability.graph_refusal(model.graph, model_opsets(model), graph_values(model.graph)):
                continue
            inputs, _ = case.data_sets[0]
            names = [value.name for value in model.graph.input]
            feeds = {name: np.asarray(value) for name, value in zip(names, inputs)}
            (folder / "plan.epk").write_bytes(plan_for(model, feeds))
            paths = []
            for k, name in enumerate(names):
                np.save(folder / f"{k}.npy", feeds[name])
                paths.append(str(folder / f"{k}.npy"))
            (folder / "out").mkdir(exist_ok=True)
            run = subprocess.run([str(binary), str(folder / "plan.epk"), str(folder / "out"), *paths],
                                 capture_output=True, text=True)
            if run.returncode != 0 or "Sanitizer" in run.stderr or "runtime error" in run.stderr:
                problems.append(f"{case.name}: exit {run.returncode}: {run.stderr[:300]}")
            else:
                clean += 1
    print(f"{clean} claimed node cases ran clean under ASan+UBSan, {len(problems)} did not")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
