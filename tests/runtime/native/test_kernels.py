"""The kernels' fast paths (depthwise rows, im2col panels inside the input, narrow convs as dot products,
ConvTranspose's scatter, global pools, broadcast MatMul, products with few rows) and Resize over height and width
against `reference` on single-node models, within 1e-4 of the output's scale."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.nn_ops import PADDED_CONV_FLOATS, padded_conv_scratch
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

from .sample_plans import TOLERANCE, relative_error, sanitized_output


def single_node(op: str, x_shape: list[int], constants: dict[str, np.ndarray], extra_inputs: list[str],
                **attributes: object) -> onnx.ModelProto:
    node = helper.make_node(op, ["x", *extra_inputs], ["y"], **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def check(model: onnx.ModelProto, x: np.ndarray) -> None:
    expected = PROVIDERS["reference"].compile(model, {}).run({"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert actual.shape == expected.shape
    assert relative_error(expected, actual) <= TOLERANCE


CONVS = [  # (channels in, out, group, kernel, strides, pads, dilations, size)
    (8, 8, 8, 3, 1, 1, 1, 19), (8, 8, 8, 3, 2, 1, 1, 21), (6, 6, 6, 5, 1, 2, 1, 17), (4, 4, 4, 3, 1, 2, 2, 15),
    (3, 16, 1, 3, 1, 1, 1, 40), (3, 16, 1, 3, 2, 0, 1, 37), (8, 12, 4, 3, 1, 1, 2, 23), (16, 96, 1, 3, 1, 0, 1, 4),
    (16, 80, 1, 1, 1, 0, 1, 3), (5, 7, 1, 1, 1, 0, 1, 33), (13, 70, 1, 3, 1, 1, 1, 2), (10, 64, 2, 3, 2, 1, 1, 3),
    (16, 16, 16, 5, 2, 2, 1, 14), (4, 4, 4, 3, 2, 0, 1, 9), (8, 8, 8, 3, 1, 1, 1, 70), (6, 6, 6, 5, 2, 2, 1, 131),
    (8, 8, 8, 3, 1, 1, 1, 37), (20, 20, 20, 5, 1, 2, 1, 9), (12, 12, 12, 3, 1, 1, 1, 4),
]
"""The first four, the four after the two narrow ones, and the last three are depthwise. Planes of fewer than 16
output columns run a block of channels at a time with one channel per lane (3x3 with stride 2 down to 12 columns
and, unpadded, to 5; 5x5 with stride 2 down to 9; 5x5 over 12 columns and 3x3 over 7; 20 and 12 channels leave a
partial block of 16 lanes); the others (3x3 planes of 22, 73 and 40 columns, 5x5 over 20, a dilated 3x3 over 18,
5x5 with stride 2 over 67 columns) one plane at a time on bands of zero-padded input rows, the largest in several
bands. The narrow two (at most 10 output positions and under a panel's columns, two panels' worth of output
channels per group or more) have odd K, rows and positions that leave partial blocks."""


@pytest.mark.parametrize("case", CONVS)
def test_conv_paths(case: tuple[int, ...]) -> None:
    cin, cout, group, kernel, stride, pad, dilation, size = case
    rng = np.random.default_rng(sum(case))
    weights = rng.standard_normal((cout, cin // group, kernel, kernel)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    model = single_node("Conv", [1, cin, size, size + 3], {"w": weights, "b": bias}, ["w", "b"], group=group,
                        strides=[stride, stride], pads=[pad] * 4, dilations=[dilation, dilation])
    check(model, rng.standard_normal((1, cin, size, size + 3)).astype(np.float32))


ONE_DIMENSIONAL_CONVS = [  # (channels in, out, kernel, stride, pad, dilation, length, along H)
    (20, 40, 3, 1, 1, 1, 75, False), (20, 40, 3, 2, 1, 1, 75, False), (12, 24, 5, 1, 0, 2, 600, False),
    (24, 48, 5, 1, 0, 1, 90, True), (16, 8, 3, 2, 1, 1, 41, True),
]
"""1-D convs, whose im2col panels are packed rather than read in place: as Conv1d exports them (rank 3) and laid
along H (one column, as magika's), stride 1 and 2, padded and not, dilated, over partial panels and over more than
one block of columns."""


@pytest.mark.parametrize("case", ONE_DIMENSIONAL_CONVS)
def test_one_dimensional_conv_against_onnxruntime(case: tuple[int | bool, ...]) -> None:
    cin, cout, kernel, stride, pad, dilation, length, along_h = case
    rng = np.random.default_rng(sum(case))
    spatial, kernel_shape = ([length, 1], [kernel, 1]) if along_h else ([length], [kernel])
    weights = rng.standard_normal((cout, cin, *kernel_shape)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    ones = [1] * (len(spatial) - 1)
    model = single_node("Conv", [1, cin, *spatial], {"w": weights, "b": bias}, ["w", "b"], strides=[stride, *ones],
                        pads=[pad, *[0] * len(ones)] * 2, dilations=[dilation, *ones])
    x = rng.standard_normal((1, cin, *spatial)).astype(np.float32)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert relative_error(run_onnxruntime(model, {"x": x})["y"], actual) <= TOLERANCE


DEPTHWISE_BANDS = [  # (channels, kernel h, kernel w, stride h, stride w, pad, dilation, height, width)
    (3, 3, 3, 1, 1, 1, 1, 150, 150), (3, 3, 3, 2, 2, 1, 1, 161, 157), (5, 5, 5, 1, 1, 2, 1, 23, 90),
    (3, 5, 5, 2, 1, 2, 1, 12, 80), (4, 3, 5, 1, 1, 1, 1, 11, 70), (4, 3, 3, 3, 3, 1, 1, 20, 50),
    (4, 3, 3, 1, 1, 2, 2, 17, 66), (3, 7, 7, 2, 2, 3, 1, 30, 45), (4, 3, 3, 2, 2, 1, 1, 9, 19),
    (5, 3, 3, 2, 2, 0, 1, 30, 41), (2, 3, 3, 2, 2, 1, 2, 31, 70),
]
"""Depthwise planes on bands of zero-padded input rows: one and several bands of 3x3 with stride 1 (unrolled, two rows a
step) and stride 2 (its nine taps at fixed offsets: padded, unpadded over 20 columns, and dilated, which goes over tap
offsets), 5x5 over an odd count of rows (the last one over tap offsets), strides of 2 by 1 and 3 by 3 (its rows split
into three column phases one by one), a 3x5 kernel, a dilated one, 7x7, and 10 output columns (under a vector:
through the scratch)."""


def depthwise_case(case: tuple[int, ...]) -> tuple[onnx.ModelProto, np.ndarray]:
    channels, kh, kw, sh, sw, pad, dilation, height, width = case
    rng = np.random.default_rng(sum(case))
    weights = rng.standard_normal((channels, 1, kh, kw)).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    model = single_node("Conv", [1, channels, height, width], {"w": weights, "b": bias}, ["w", "b"], group=channels,
                        strides=[sh, sw], pads=[pad] * 4, dilations=[dilation, dilation])
    return model, rng.standard_normal((1, channels, height, width)).astype(np.float32)


@pytest.mark.parametrize("case", DEPTHWISE_BANDS)
def test_depthwise_bands(case: tuple[int, ...]) -> None:
    check(*depthwise_case(case))


DEPTHWISE_LANES = [  # (channels, kernel h, kernel w, stride h, stride w, pad, dilation, height, width)
    (13, 3, 3, 1, 1, 1, 1, 9, 11), (18, 5, 5, 1, 1, 2, 1, 7, 7), (20, 3, 3, 2, 2, 1, 1, 27, 29),
    (6, 3, 5, 1, 1, 1, 1, 6, 9), (8, 3, 3, 1, 1, 2, 2, 10, 10), (3, 7, 7, 2, 2, 3, 1, 13, 25),
]
"""Depthwise planes under 16 output columns, a block of channels at a time, one per lane: channel counts that leave
lanes past the last whole group of 4 (13; 18, whose second block of 16 lanes has 2), rows and planes whose
positions are not a multiple of 4 or 8, 3x3 with stride 2, a 3x5 kernel, a dilated one and 7x7 with stride 2."""


@pytest.mark.parametrize("case", DEPTHWISE_LANES)
def test_depthwise_lanes(case: tuple[int, ...]) -> None:
    check(*depthwise_case(case))


@pytest.mark.parametrize(("width", "stride"), [(14, 1), (40, 1), (41, 2)])
def test_depthwise_after_an_op_that_fills_the_scratch(width: int, stride: int) -> None:
    """Depthwise convs zero only the padding around their input in the scratch (a block of 16 lanes around its
    interleaved input; bands once for all their planes, then only the input's floats of each row): after a conv
    whose packed panels filled the same scratch with other values, the padding must still read as zeros (3x3, pads
    1, 32 channels; 14 columns run in lanes, 40 on bands with stride 1, 41 on bands with stride 2)."""
    rng = np.random.default_rng(21 + width)
    constants = {"w": rng.standard_normal((32, 16, 3, 3)).astype(np.float32),
                 "dw": rng.standard_normal((32, 1, 3, 3)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
             helper.make_node("Conv", ["c", "dw"], ["y"], pads=[1] * 4, group=32, strides=[stride, stride])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
          rng.standard_normal((1, 16, 12, width)).astype(np.float32))


def test_depthwise_planes_run_clean_under_address_and_undefined_sanitizers(tmp_path: Path) -> None:
    """The planes on bands and in lanes through the sanitized runner (8-lane vectors, no AVX): no read or write
    outside the scratch, the input or the output, and the same results."""
    for index, case in enumerate(DEPTHWISE_BANDS + DEPTHWISE_LANES):
        model, x = depthwise_case(case)
        expected = PROVIDERS["reference"].compile(model, {}).run({"x": x})["y"]
        assert relative_error(expected, sanitized_output(model, x, tmp_path / str(index))) <= TOLERANCE, case


@pytest.mark.parametrize(("channels", "size"), [(4, 120), (32, 100), (4, 128), (4, 730)],
                         ids=["padded, rows shifted", "padded, on the grid", "padded, whole panels per row",
                              "over the padded limit"])
def test_stride_one_conv_on_a_padded_input_and_past_its_limit(channels: int, size: int) -> None:
    """A 3x3 stride-1 conv runs on its input zero-padded into the scratch (conv.c's padded_conv_of) while the padded
    input and the output grid take at most 4 Mi floats; a 4-channel 730x730 plane is past that and runs in place.
    128 output columns are whole panels on every build (8, 16 or 32 columns), written in place row by row. 120 are
    not: with 4 channels (36 taps) each row's last panel is shifted left to end where the row does; 100 columns of
    32 channels (288 taps) go through the grid (conv.c's shifted_rows, for 16- and 32-column panels). Against
    onnxruntime (the reference evaluator is slow at this size)."""
    rng = np.random.default_rng(size)
    weights = rng.standard_normal((4, channels, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    model = single_node("Conv", [1, channels, size, size], {"w": weights, "b": bias}, ["w", "b"], pads=[1, 1, 1, 1])
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert actual.shape == expected.shape and relative_error(expected, actual) <= TOLERANCE


STRIDE_TWO = {  # channels in, out, group, kernel h w, pads (top, left, bottom, right), input h w
    "stem 3x3": (3, 16, 1, (3, 3), (1, 1, 1, 1), (64, 64)),
    "stem 3x3, rows shifted": (3, 16, 1, (3, 3), (1, 1, 1, 1), (96, 90)),
    "same upper, odd size": (8, 12, 1, (3, 3), (0, 0, 1, 1), (23, 17)),
    "5x5 groups": (8, 6, 2, (5, 5), (2, 2, 2, 2), (19, 26)),
    "7x7 stem": (3, 8, 1, (7, 7), (3, 3, 3, 3), (30, 41)),
    "2x2 no padding": (6, 10, 1, (2, 2), (0, 0, 0, 0), (16, 15)),
    "3x1 uneven pads": (5, 7, 1, (3, 1), (2, 0, 1, 0), (12, 9)),
    "past the padded limit, in bands": (16, 4, 1, (3, 3), (1, 1, 1, 1), (600, 600)),
    "in bands, 5x5, uneven pads": (16, 6, 1, (5, 5), (2, 1, 1, 2), (701, 433)),
    "in bands, 2x2 no padding": (20, 8, 1, (2, 2), (0, 0, 0, 0), (650, 401)),
    "panels copied, on the grid": (32, 40, 1, (3, 3), (1, 1, 1, 1), (41, 70)),
    "panels copied, rows shifted": (40, 37, 1, (3, 3), (1, 1, 1, 1), (30, 80)),
    "panels copied, whole rows, groups": (64, 70, 2, (3, 3), (1, 1, 1, 1), (20, 64)),
    "panels copied, in bands": (12, 33, 1, (5, 5), (2, 2, 2, 2), (1290, 301)),
}
"""Stride-2 convs without dilation run on the four phases of their zero-padded input (conv.c's padded_conv_of); where
those and the output grid would take over 4 Mi floats (16 channels of 600x600), in bands of output rows that fit,
each band's phases built in turn (the last band shorter, the bottom padding in it). Past 256 taps (channels x
kernel) and from 32 output channels each panel is copied out of the phases before its product (conv.c's
PACKED_PHASE_TAPS): on the output grid, into rows whose last panel is shifted, into whole panels a row, and in
bands."""


@pytest.mark.parametrize("case", list(STRIDE_TWO))
def test_stride_two_conv_on_the_phases_of_a_padded_input(case: str) -> None:
    check_stride_two(case, "cpu")


@pytest.mark.parametrize("case", [case for case in STRIDE_TWO if "bands" in case][1:])
def test_stride_two_conv_in_bands_on_the_wasm_core(case: str) -> None:
    if reason := PROVIDERS["wasm"].missing():
        pytest.skip(reason)
    check_stride_two(case, "wasm")


@pytest.mark.parametrize("case", ["in bands, 2x2 no padding", "panels copied, rows shifted"])
def test_stride_two_conv_runs_clean_under_address_and_undefined_sanitizers(case: str, tmp_path: Path) -> None:
    """Each band's phases, the copied panels and the products stay inside the scratch, the input and the output (the
    sanitized runner: 8-lane vectors, no AVX), with onnxruntime's results."""
    model, x = stride_two_case(case)
    assert relative_error(run_onnxruntime(model, {"x": x})["y"], sanitized_output(model, x, tmp_path / "conv")) \
        <= TOLERANCE


def test_a_stride_two_conv_past_the_limit_is_sized_for_bands() -> None:
    """The plan compiler sizes the scratch of a stride-2 conv past the padded limit for one band (the core refuses a
    plan whose scratch is short of what its check asks), not for the whole conv's phases."""
    cin, cout, _, kernel, pads, size = STRIDE_TWO["past the padded limit, in bands"]
    out = [(size[i] + pads[i] + pads[i + 2] - kernel[i]) // 2 + 1 for i in range(2)]
    scratch = padded_conv_scratch(cin, cout, size, out, kernel, [2, 2], pads[:2], [1, 1])
    assert 0 < scratch <= 4 * (PADDED_CONV_FLOATS + cout * 32 + cin * 9 + 64)
    assert scratch < 4 * cin * 4 * (size[0] // 2 + 1) * (size[1] // 2 + 1)


def stride_two_case(case: str) -> tuple[onnx.ModelProto, np.ndarray]:
    cin, cout, group, kernel, pads, size = STRIDE_TWO[case]
    rng = np.random.default_rng(len(case))
    weights = rng.standard_normal((cout, cin // group, *kernel)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    model = single_node("Conv", [1, cin, *size], {"w": weights, "b": bias}, ["w", "b"], group=group, strides=[2, 2],
                        pads=[pads[0], pads[1], pads[2], pads[3]])
    return model, rng.standard_normal((1, cin, *size)).astype(np.float32)


def check_stride_two(case: str, provider: str) -> None:
    model, x = stride_two_case(case)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    assert actual.shape == expected.shape and relative_error(expected, actual) <= TOLERANCE


CONV_TRANSPOSES = [  # (channels in, out, group, kernel, strides, pads, dilations, output padding, size)
    (24, 24, 1, 2, 2, 0, 1, 0, 9), (24, 1, 1, 2, 2, 0, 1, 0, 7), (8, 6, 1, 3, 2, 1, 1, 1, 6),
    (8, 12, 2, 3, 1, 1, 2, 0, 5), (5, 7, 1, 4, 3, 2, 1, 2, 4), (6, 8, 2, 3, 3, 0, 1, 0, 5),
]
"""Kernel equal to the stride (PP-OCR det's upsampling: each input pixel to its own outputs, written in place; the
last case in groups, three columns per input pixel), overlapping taps with padding and output padding, groups and
dilation, and a kernel past the stride."""


@pytest.mark.parametrize("case", CONV_TRANSPOSES)
def test_conv_transpose_paths(case: tuple[int, ...]) -> None:
    cin, cout, group, kernel, stride, pad, dilation, output_padding, size = case
    rng = np.random.default_rng(sum(case))
    weights = rng.standard_normal((cin, cout // group, kernel, kernel)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    model = single_node("ConvTranspose", [1, cin, size, size + 3], {"w": weights, "b": bias}, ["w", "b"],
                        group=group, strides=[stride, stride], pads=[pad] * 4, dilations=[dilation, dilation],
                        output_padding=[output_padding, output_padding])
    check(model, rng.standard_normal((1, cin, size, size + 3)).astype(np.float32))


@pytest.mark.parametrize("activation", ["Relu", "HardSigmoid"])
@pytest.mark.parametrize("kernel", [2, 3])
def test_upsampling_conv_transpose_with_its_activation(kernel: int, activation: str) -> None:
    """A ConvTranspose whose kernel is its stride takes the activation after it into its own writes (each output
    written once, so activated once), over input rows that the product's blocks split."""
    rng = np.random.default_rng(kernel)
    weights = rng.standard_normal((12, 5, kernel, kernel)).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["t"], strides=[kernel, kernel]),
             helper.make_node(activation, ["t"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12, 9, 13])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert [op.kind for op in lower_to_plan(model, {"x": (1, 12, 9, 13)}).ops] == ["ConvTranspose"]
    check(model, rng.standard_normal((1, 12, 9, 13)).astype(np.float32))


@pytest.mark.parametrize(("mode", "transform"), [("nearest", "asymmetric"), ("nearest", "half_pixel"),
                                                 ("linear", "half_pixel"), ("linear", "align_corners")])
def test_planar_resize(mode: str, transform: str) -> None:
    scales = np.array([1, 1, 2.0, 3.0], dtype=np.float32)
    model = single_node("Resize", [1, 3, 7, 5], {"scales": scales}, ["", "scales"], mode=mode,
                        coordinate_transformation_mode=transform)
    check(model, np.random.default_rng(1).standard_normal((1, 3, 7, 5)).astype(np.float32))


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools(op: str) -> None:
    check(single_node(op, [2, 5, 9, 7], {}, []),
          np.random.default_rng(2).standard_normal((2, 5, 9, 7)).astype(np.float32))


def test_broadcast_matmul() -> None:
    w = np.random.default_rng(3).standard_normal((3, 1, 20, 37)).astype(np.float32)
    check(single_node("MatMul", [4, 13, 20], {"w": w}, ["w"]),
          np.random.default_rng(4).standard_normal((4, 13, 20)).astype(np.float32))


@pytest.mark.parametrize("shape", [(1, 1152), (3, 40), (2, 3, 5)], ids=["one-row", "three-rows", "batched"])
def test_matmul_with_few_rows(shape: tuple[int, ...]) -> None:
    """At most four rows of output: each row of B read once for all of them (ep_gemv), its columns in blocks of
    2048 / M (to 16) with a partial last one."""
    w = np.random.default_rng(5).standard_normal((shape[-1], 2100)).astype(np.float32)
    check(single_node("MatMul", list(shape), {"w": w}, ["w"]), np.random.default_rng(6).standard_normal(shape)
          .astype(np.float32))


@pytest.mark.parametrize("rows", [13, 63, 64, 70])
def test_matmul_with_aligned_rows_of_b(rows: int) -> None:
    """B's rows 80 floats apart (64-byte multiples): under 64 rows of output its full panels are read in place and
    the rest packed; from 64 rows on it is packed whole."""
    w = np.random.default_rng(8).standard_normal((64, 80)).astype(np.float32)
    check(single_node("MatMul", [rows, 64], {"w": w}, ["w"]), np.random.default_rng(9).standard_normal((rows, 64))
          .astype(np.float32))


@pytest.mark.parametrize("rows", range(1, 17))
def test_products_with_every_count_of_last_rows(rows: int) -> None:
    """5 to 16 rows of output leave every count of last rows for a micro-kernel of 4, 6 or 8 rows (wasm, AVX2 and
    NEON, AVX-512), whose spare rows are computed and not stored, or run in a short tile; 1 to 4 rows are a product's
    only tile, which in a conv read in place is also the one that asks the cache ahead: through a B packed at plan
    time (MatMul by a constant), one read in place (a strided conv, on its input's phases) and one packed per call
    (a 1x1 conv), each with a column it does not fill."""
    rng = np.random.default_rng(rows)
    w = rng.standard_normal((48, 70)).astype(np.float32)
    check(single_node("MatMul", [rows, 48], {"w": w}, ["w"]), rng.standard_normal((rows, 48)).astype(np.float32))
    for kernel, stride in ((3, 2), (1, 1)):
        weights = rng.standard_normal((rows, 12, kernel, kernel)).astype(np.float32)
        bias = rng.standard_normal(rows).astype(np.float32)
        model = single_node("Conv", [1, 12, 9, 75], {"w": weights, "b": bias}, ["w", "b"], strides=[stride, stride])
        check(model, rng.standard_normal((1, 12, 9, 75)).astype(np.float32))


@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_with_few_rows(trans_a: int, trans_b: int) -> None:
    """Two rows of output with alpha, beta and a C that broadcasts over them; B stored either way round (the
    compiler stores a transposed constant B as K x N)."""
    rng = np.random.default_rng(7 + 2 * trans_a + trans_b)
    b = rng.standard_normal((300, 70) if trans_b else (70, 300)).astype(np.float32)
    c = rng.standard_normal(300).astype(np.float32)
    x_shape = [70, 2] if trans_a else [2, 70]
    model = single_node("Gemm", x_shape, {"b": b, "c": c}, ["b", "c"], transA=trans_a, transB=trans_b, alpha=0.5,
                        beta=2.0)
    check(model, rng.standard_normal(x_shape).astype(np.float32))


MAX_POOLS = [({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 13),
             ({"kernel_shape": [3, 3], "strides": [1, 1]}, 14), ({"kernel_shape": [2, 2], "strides": [2, 2]}, 13),
             ({"kernel_shape": [2, 3], "strides": [1, 2], "dilations": [2, 2]}, 15),
             ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 2100),
             ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}, 70)]
"""Windows inside the input (maxed column by column over the rows' maxima), at the padded edges, dilated, a row
wider than the rows' maxima buffer (2048), and stride 2 over 35 outputs (whole vectors and a remainder)."""


def max_pool_propagating_nan(x: np.ndarray, kernel_shape: list[int], strides: list[int],
                             pads: tuple[int, ...] = (0, 0, 0, 0), dilations: tuple[int, ...] = (1, 1)) -> np.ndarray:
    """The max of each window, NaN where the window holds one (np.maximum), the padding never chosen."""
    padded = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=-np.inf)
    out_h = (padded.shape[2] - (kernel_shape[0] - 1) * dilations[0] - 1) // strides[0] + 1
    out_w = (padded.shape[3] - (kernel_shape[1] - 1) * dilations[1] - 1) // strides[1] + 1
    result = np.full((*x.shape[:2], out_h, out_w), -np.inf, np.float32)
    for ky in range(kernel_shape[0]):
        for kx in range(kernel_shape[1]):
            top, left = ky * dilations[0], kx * dilations[1]
            result = np.maximum(result, padded[:, :, top:top + strides[0] * (out_h - 1) + 1:strides[0],
                                               left:left + strides[1] * (out_w - 1) + 1:strides[1]])
    return result


@pytest.mark.parametrize(("attributes", "width"), MAX_POOLS)
def test_max_pool_paths_propagate_nan(attributes: dict[str, list[int]], width: int) -> None:
    """A window holding a NaN gives NaN (the kernel's rule; onnxruntime's and onnx's evaluator depend on where the
    NaN falls)."""
    x = np.random.default_rng(width).standard_normal((1, 2, 9, width)).astype(np.float32)
    x.reshape(-1)[::37] = np.nan
    model = single_node("MaxPool", [1, 2, 9, width], {}, [], **attributes)
    expected = max_pool_propagating_nan(x, **attributes)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    assert np.isnan(expected).any() and not np.isnan(expected).all()
    np.testing.assert_array_equal(actual, expected)


def product_then_sigmoid(op: str, gated: bool = False) -> onnx.ModelProto:
    """A 1x1 Conv (8 to 40 channels over 9x11 positions) or a MatMul (40x64 by 64x70) whose Sigmoid folds into it, or
    (`gated`) whose Swish does: the product times its Sigmoid."""
    rng = np.random.default_rng(len(op))
    if op == "Conv":
        shape, weights = [1, 8, 9, 11], {"w": rng.standard_normal((40, 8, 1, 1)).astype(np.float32)}
    else:
        shape, weights = [1, 40, 64], {"w": rng.standard_normal((64, 70)).astype(np.float32) * 0.2}
    nodes = [helper.make_node(op, ["x", "w"], ["p"]), helper.make_node("Sigmoid", ["p"], ["s" if gated else "y"])]
    if gated:
        nodes.append(helper.make_node("Mul", ["p", "s"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("gated", [False, True], ids=["Sigmoid", "Swish"])
@pytest.mark.parametrize("op", ["Conv", "MatMul"])
def test_a_sigmoid_folded_into_a_product_covers_whole_panels_and_the_rest(op: str, gated: bool) -> None:
    """The product's tiles of whole panels take the Sigmoid (or Swish) on their sums in vectors before storing them;
    99 positions (or 70 columns) leave a partial panel too, stored through the scalar tile and activated a row at a
    time (the same lanes' function)."""
    model = product_then_sigmoid(op, gated)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert [o.kind for o in lower_to_plan(model, {"x": shape}).ops] == [op if op == "Conv" else "PackedMatMul"]
    check(model, np.random.default_rng(5).standard_normal(shape).astype(np.float32))


@pytest.mark.parametrize("shape", [[4, 7, 40], [3, 37], [2, 5, 3, 8]], ids=["40 wide", "37 wide", "two axes"])
def test_layer_norm_rows_against_onnxruntime(shape: list[int]) -> None:
    """Rows of whole vectors, with a tail, and over the last two axes (24 wide), offset far from zero (the variance is
    taken about the mean): within 1e-5 of onnxruntime."""
    rng = np.random.default_rng(len(shape))
    axis = -2 if len(shape) == 4 else -1
    width = int(np.prod(shape[axis:]))
    constants = {"s": rng.standard_normal(shape[axis:]).astype(np.float32),
                 "b": rng.standard_normal(shape[axis:]).astype(np.float32)}
    model = single_node("LayerNormalization", shape, constants, ["s", "b"], axis=axis, epsilon=1e-5)
    assert width in (40, 37, 24) and [op.kind for op in lower_to_plan(model, {"x": shape}).ops] == ["LayerNorm"]
    x = (rng.standard_normal(shape) * 3 + 50).astype(np.float32)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_allclose(actual, run_onnxruntime(model, {"x": x})["y"], rtol=1e-5, atol=1e-5)
