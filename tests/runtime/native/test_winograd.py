"""3x3 stride-1 convs through Winograd F(2x2, 3x3) (kernels/winograd.c) against onnxruntime on the source model:
odd output sizes (tiles half outside), asymmetric and wide pads, block ends inside a tile row, a fused activation, a
batch of two; the host core takes Winograd exactly where its kind's kernel selection table says (bit for bit the
output of a core forced one way or the other), the sanitized runner reads and writes nothing outside its buffers,
and the wasm core (which leaves Winograd out) runs the same plans directly within their scratch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.nn_ops import WINOGRAD_MAX_WEIGHT_FLOATS, winograd_scratch
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession
from edgepack.runtime.native.build import core_kind, forced_winograd_library, shared_library
from edgepack.runtime.native.kernel_choice import (
    winograd_channels,
    winograd_everywhere,
    winograd_may_run,
    winograd_wins,
)
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
"""Each is one the default rule runs through Winograd (32 channels or more by `winograd_channels`, 128 tiles of 2x2
outputs or more), so that the sanitized runner (a core of no measured kind) takes that path."""


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


def tiles(out: tuple[int, int]) -> int:
    return ((out[0] + 1) // 2) * ((out[1] + 1) // 2)


def forced_outputs(model: onnx.ModelProto, x: np.ndarray) -> dict[str, np.ndarray]:
    """The output of the host core as built (`table`), forced to Winograd (`winograd`) and forced direct
    (`direct`), on one plan that holds Winograd's scratch."""
    with winograd_everywhere():
        plan = epk.write(lower_to_plan(model, {"x": x.shape}))
    libraries = {"table": shared_library(), "winograd": forced_winograd_library(1),
                 "direct": forced_winograd_library(0)}
    return {side: NativeSession(plan, library).run({"x": x})["y"] for side, library in libraries.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_winograd_agrees_with_onnxruntime(case: str) -> None:
    """Through the core forced to Winograd, whose output is not the direct conv's bit for bit; the plan lowered as
    usual holds Winograd's scratch, since the default rule takes these shapes."""
    cin, cout, pads, size, batch, activation = CASES[case]
    model, x = conv_model(cin, cout, pads, size, batch, activation)
    out = output_size(pads, size)
    assert winograd_wins("default", winograd_channels(cin, cout), tiles(out))
    assert lower_to_plan(model, {"x": x.shape}).scratch_bytes >= \
        winograd_scratch(cin, cout, 1, out, (3, 3), (1, 1), (1, 1)) > 0
    expected = run_onnxruntime(model, {"x": x})["y"]
    outputs = forced_outputs(model, x)
    assert outputs["winograd"].shape == expected.shape and relative_error(expected, outputs["winograd"]) <= TOLERANCE
    assert not np.array_equal(outputs["winograd"], outputs["direct"])


GRID_SHAPES = [(channels, channels, size) for channels in (16, 24, 32, 40, 48, 64)
               for size in ((8, 8), (8, 16), (14, 14), (16, 16), (16, 32), (22, 24))]
"""C -> C channels and output sizes (pads 1) across the low corner of the table, where kinds differ: edges and
values between them (40 channels, 49 and 132 tiles)."""
UNEVEN_SHAPES = [(96, 24, (16, 32)), (24, 96, (16, 32)), (64, 16, (22, 24)), (16, 64, (22, 24)), (48, 12, (16, 32))]
"""Input and output channels apart: 96 -> 24 over 128 tiles takes Winograd on the measured kinds by its input
channels (48 by `winograd_channels`), where the smaller side, 24, would have kept it direct."""


@pytest.mark.parametrize(("cin", "cout", "size"), GRID_SHAPES + UNEVEN_SHAPES,
                         ids=[f"{i}-{o}x{h}x{w}" for i, o, (h, w) in GRID_SHAPES + UNEVEN_SHAPES])
def test_the_host_core_takes_winograd_where_its_kinds_table_says(cin: int, cout: int, size: tuple[int, int]) -> None:
    """The host core's output is the forced Winograd core's bit for bit where the table of its kind (the compiler's
    for -march=native) runs Winograd, the forced direct core's elsewhere; the plan lowered as usual holds Winograd's
    scratch where some kind's core may take it, and onnxruntime's results."""
    model, x = conv_model(cin, cout, (1, 1, 1, 1), size, 1, None)
    outputs = forced_outputs(model, x)
    channels = winograd_channels(cin, cout)
    wins = winograd_wins(core_kind(), channels, tiles(size))
    np.testing.assert_array_equal(outputs["table"], outputs["winograd" if wins else "direct"])
    reserved = lower_to_plan(model, {"x": x.shape}).scratch_bytes >= \
        winograd_scratch(cin, cout, 1, size, (3, 3), (1, 1), (1, 1)) > 0
    assert reserved == winograd_may_run(channels, tiles(size)) and (reserved or not wins)
    assert relative_error(run_onnxruntime(model, {"x": x})["y"], outputs["table"]) <= TOLERANCE


def test_filters_over_the_weight_bound_run_directly() -> None:
    """16 transformed filters of 264 x 264 channels pass 2^20 floats: no Winograd scratch, and the direct conv's
    output even from the core forced to Winograd."""
    model, x = conv_model(264, 264, (1, 1, 1, 1), (16, 16), 1, None)
    assert 16 * 264 * 264 > WINOGRAD_MAX_WEIGHT_FLOATS
    assert winograd_scratch(264, 264, 1, (16, 16), (3, 3), (1, 1), (1, 1)) == 0
    outputs = forced_outputs(model, x)
    np.testing.assert_array_equal(outputs["winograd"], outputs["direct"])
    assert relative_error(run_onnxruntime(model, {"x": x})["y"], outputs["table"]) <= TOLERANCE


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
