"""3x3 stride-1 convs through Winograd F(2x2, 3x3) (kernels/winograd.c) against onnxruntime on the source model:
odd output sizes (tiles half outside), asymmetric and wide pads, block ends inside a tile row, a fused activation, a
batch of two; the shapes just under its limits run directly, the sanitized runner reads and writes nothing outside
its buffers, and the wasm core (which leaves Winograd out) runs the same plans directly within their scratch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.nn_ops import WINOGRAD_MIN_CHANNELS, WINOGRAD_MIN_TILES, winograd_scratch
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

from .sample_plans import TOLERANCE, relative_error, sanitized_output

CASES = {  # channels in, out, pads (top, left, bottom, right), input h w, batch, activation after the conv
    "96 channels of 52x52": (96, 96, (1, 1, 1, 1), (52, 52), 1, None),
    "odd output, 48 to 192": (48, 192, (1, 1, 1, 1), (23, 31), 1, None),
    "no padding, odd tiles": (32, 40, (0, 0, 0, 0), (29, 37), 1, None),
    "asymmetric and wide pads": (33, 35, (2, 0, 1, 3), (24, 25), 1, "Relu"),
    "a tile row across blocks": (32, 32, (1, 1, 1, 1), (18, 130), 2, "Sigmoid"),
}
"""Each runs through Winograd: 32 channels or more each side, 128 tiles of 2x2 outputs or more."""


def conv_model(cin: int, cout: int, pads: tuple[int, ...], size: tuple[int, int], batch: int,
               activation: str | None) -> tuple[onnx.ModelProto, np.ndarray]:
    rng = np.random.default_rng(cin * cout + sum(pads) + sum(size))
    constants = {"w": rng.standard_normal((cout, cin, 3, 3)).astype(np.float32) / 6,
                 "b": rng.standard_normal(cout).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if activation else "y"], pads=list(pads))]
    if activation:
        nodes.append(helper.make_node(activation, ["c"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, *size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model, rng.standard_normal((batch, cin, *size)).astype(np.float32)


def output_size(pads: tuple[int, ...], size: tuple[int, int]) -> tuple[int, int]:
    return size[0] + pads[0] + pads[2] - 2, size[1] + pads[1] + pads[3] - 2


@pytest.mark.parametrize("case", list(CASES))
def test_winograd_agrees_with_onnxruntime(case: str) -> None:
    cin, cout, pads, size, batch, activation = CASES[case]
    model, x = conv_model(cin, cout, pads, size, batch, activation)
    out = output_size(pads, size)
    assert winograd_scratch(cin, cout, 1, out, (3, 3), (1, 1), (1, 1)) > 0
    plan = lower_to_plan(model, {"x": x.shape})
    assert plan.scratch_bytes >= winograd_scratch(cin, cout, 1, out, (3, 3), (1, 1), (1, 1))
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert actual.shape == expected.shape and relative_error(expected, actual) <= TOLERANCE


@pytest.mark.parametrize(("cin", "cout", "size"), [(WINOGRAD_MIN_CHANNELS - 1, 64, (30, 30)),
                                                    (64, WINOGRAD_MIN_CHANNELS - 1, (30, 30)),
                                                    (64, 64, (21, 21))],
                         ids=["few input channels", "few output channels", "few tiles"])
def test_under_the_limits_the_conv_runs_directly(cin: int, cout: int, size: tuple[int, int]) -> None:
    """One channel too few on either side, or 11 x 11 = 121 tiles (under 128): no Winograd scratch, and the direct
    conv's results."""
    model, x = conv_model(cin, cout, (0, 0, 0, 0), size, 1, None)
    out = output_size((0, 0, 0, 0), size)
    assert ((out[0] + 1) // 2) * ((out[1] + 1) // 2) < WINOGRAD_MIN_TILES or min(cin, cout) < WINOGRAD_MIN_CHANNELS
    assert winograd_scratch(cin, cout, 1, out, (3, 3), (1, 1), (1, 1)) == 0
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert relative_error(expected, actual) <= TOLERANCE


@pytest.mark.parametrize("case", ["96 channels of 52x52", "asymmetric and wide pads"])
def test_the_wasm_core_runs_the_same_plan_directly(case: str) -> None:
    model, x = conv_model(*CASES[case])
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["wasm"].compile(model, {}).run({"x": x})["y"]
    assert relative_error(expected, actual) <= TOLERANCE


def test_winograd_runs_clean_under_address_and_undefined_sanitizers(tmp_path: Path) -> None:
    """The cases through the sanitized runner (8-lane vectors, no AVX): no read or write outside the scratch, the
    input or the output, and onnxruntime's results."""
    for index, case in enumerate(CASES.values()):
        model, x = conv_model(*case)
        expected = run_onnxruntime(model, {"x": x})["y"]
        assert relative_error(expected, sanitized_output(model, x, tmp_path / str(index))) <= TOLERANCE, case
