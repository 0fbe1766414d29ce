"""Every onnx node case the `cpu` provider claims, lowered to an `.epk` plan and run by `ep_run` built with
AddressSanitizer and UndefinedBehaviorSanitizer (as the `neon` and `wasm` providers run their `ep_run`: inputs and
outputs through .npy files); any sanitizer report or failed run is listed.

    python fuzz/node_cases_asan.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.loader import load_model_tests

from edgepack.compiler.lower import NeedsValues, lower
from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import runner
from edgepack.runtime.native.emulated import EmulatedSession
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
    for case in cases:
        model = onnx.shape_inference.infer_shapes(case.model)
        if capability.graph_refusal(model.graph, model_opsets(model), graph_values(model.graph)):
            continue
        inputs, _ = case.data_sets[0]
        names = [value.name for value in model.graph.input]
        feeds = {name: numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)
                 for name, value in zip(names, inputs)}
        try:
            EmulatedSession(plan_for(model, feeds), [str(binary)]).run(feeds)
            clean += 1
        except EdgepackError as error:  # a sanitizer report aborts the run (-fno-sanitize-recover)
            problems.append(f"{case.name}: {str(error)[:300]}")
    print(f"{clean} claimed node cases ran clean under ASan+UBSan, {len(problems)} did not")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
