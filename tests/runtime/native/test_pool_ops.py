"""MaxPool, AveragePool, LpPool and their global forms on the `cpu` provider against onnxruntime, on single-node
models: 1-D to 3-D, strides, pads, auto_pad, dilations, ceil_mode, count_include_pad, p, int8 and uint8 MaxPool
and MaxPool's Indices in both storage orders; values within 1e-5, indices exact. Plans with bad pool parameters
are refused when they open."""

from __future__ import annotations

import struct

import numpy as np
import onnx
import pytest
from onnx import helper

from edgepack.compiler.lower import lower
from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

from .test_hostile_plans import OP, header

RNG = np.random.default_rng(5)


def pool_model(op: str, x: np.ndarray, outputs: int = 1, **attributes: object) -> onnx.ModelProto:
    names = ["y", "indices"][:outputs]
    node = helper.make_node(op, ["x"], names, **attributes)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_value_info(name, onnx.TypeProto()) for name in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(op: str, x: np.ndarray, outputs: int = 1, **attributes: object) -> None:
    model = pool_model(op, x, outputs, **attributes)
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    expected = run_onnxruntime(model, {"x": x})
    for name in ["y", "indices"][:outputs]:
        assert ours[name].dtype == expected[name].dtype and ours[name].shape == expected[name].shape, name
        if name == "indices" or x.dtype != np.float32:
            np.testing.assert_array_equal(ours[name], expected[name], err_msg=name)
        else:
            np.testing.assert_allclose(ours[name], expected[name], rtol=1e-5, atol=1e-5, err_msg=name)


def floats(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


GEOMETRIES = [
    {"kernel_shape": [3, 3, 3]},
    {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2]},
    {"kernel_shape": [3, 2, 3], "pads": [1, 0, 1, 1, 1, 0]},
    {"kernel_shape": [2, 2, 2], "dilations": [2, 1, 2], "strides": [1, 2, 1]},
    {"kernel_shape": [3, 3, 2], "strides": [2, 2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 2, 2], "strides": [2, 2, 1], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 3, 3], "strides": [2, 1, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2, 3], "auto_pad": "VALID", "strides": [1, 2, 2]},
]


@pytest.mark.parametrize("op, geometry", [(op, geometry) for op in ("MaxPool", "AveragePool", "LpPool")
                                          for geometry in GEOMETRIES if op != "LpPool" or "ceil_mode" not in geometry])
def test_3d(op: str, geometry: dict) -> None:
    check(op, floats(2, 3, 6, 7, 5), **geometry)


PADDED_2D = [
    {"kernel_shape": [13, 13], "pads": [6, 6, 6, 6]},
    {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]},
    {"kernel_shape": [3, 4], "pads": [1, 3, 0, 1], "strides": [1, 2]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [2, 3], "pads": [0, 2, 1, 0], "strides": [1, 3], "ceil_mode": 1},
    {"kernel_shape": [3, 2], "pads": [1, 1, 1, 1], "dilations": [1, 2]},
    {"kernel_shape": [3, 4], "pads": [2, 0, 1, 3]},
]
"""2-D max pools padded (SPP's 13x13 and 5x5, uneven pads, strides, ceil mode whose last windows reach past the
padding, a dilated width): stride 1 runs separably on the plane padded with -inf, the others take their column maxima
between columns of -inf."""


@pytest.mark.parametrize("size", [(13, 11), (40, 60)], ids=["small plane", "plane over the separable form's buffer"])
@pytest.mark.parametrize("geometry", PADDED_2D)
def test_padded_2d_max_pool(geometry: dict, size: tuple[int, int]) -> None:
    check("MaxPool", floats(2, 3, *size), **geometry)


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_count_include_pad(include_pad: int, ceil_mode: int) -> None:
    check("AveragePool", floats(1, 2, 7, 6, 5), kernel_shape=[3, 2, 3], strides=[2, 2, 2], pads=[1, 1, 0, 1, 0, 2],
          dilations=[1, 2, 1], count_include_pad=include_pad, ceil_mode=ceil_mode)
    check("AveragePool", floats(1, 3, 8, 7), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
          count_include_pad=include_pad, ceil_mode=ceil_mode)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool_p(p: int) -> None:
    check("LpPool", floats(2, 3, 9), kernel_shape=[3], strides=[2], pads=[1, 1], p=p)
    check("LpPool", floats(1, 2, 6, 5), kernel_shape=[2, 3], dilations=[2, 1], p=p)
    check("GlobalLpPool", floats(2, 3, 4, 5, 3), p=p)


@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (1, 4, 3, 5), (2, 2, 3, 4, 5), (1, 3, 37, 41)])
def test_global(op: str, shape: tuple[int, ...]) -> None:
    check(op, floats(*shape))


def test_global_max_keeps_a_nan_of_any_lane() -> None:
    """A plane of 1,517 values kept in 16 partial maxima, then the 13 left: a NaN in a middle lane, in the last
    value, or nowhere."""
    x = floats(1, 3, 37, 41)
    x[0, 0, 5, 7], x[0, 1, 36, 40] = np.nan, np.nan
    ours = PROVIDERS["cpu"].compile(pool_model("GlobalMaxPool", x, 1), {}).run({"x": x})["y"].ravel()
    assert np.isnan(ours[0]) and np.isnan(ours[1]) and ours[2] == x[0, 2].max()


TILING = [([2, 2], [1, 3, 10, 34]), ([1, 2], [2, 4, 5, 16]), ([3, 3], [1, 2, 11, 17]), ([2, 1], [1, 3, 9, 7]),
          ([3, 2], [1, 5, 3, 81])]
"""Pools whose windows tile the plane (kernel = stride: pool_planes.c): 2x2 and 1x2 (pairs of columns), 3x3, 2x1 and
PP-OCR rec's 3x2 (any other width), over planes whose last rows and columns no window reaches."""


@pytest.mark.parametrize(("kernel", "shape"), TILING, ids=[f"{k[0]}x{k[1]}" for k, _ in TILING])
def test_max_pool_windows_that_tile_the_plane(kernel: list[int], shape: list[int]) -> None:
    """Against onnxruntime; then with a NaN in one window, that window's output is NaN (the general path's rule, which
    onnxruntime's kernels follow for some window sizes and not others) and the others are unchanged."""
    x = floats(*shape)
    model = pool_model("MaxPool", x, 1, kernel_shape=kernel, strides=kernel)
    session = PROVIDERS["cpu"].compile(model, {})
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_array_equal(session.run({"x": x})["y"], expected)
    x[0, 0, 1, 3] = np.nan
    with_nan = session.run({"x": x})["y"]
    window = (0, 0, 1 // kernel[0], 3 // kernel[1])
    assert np.isnan(with_nan[window])
    with_nan[window] = expected[window]
    np.testing.assert_array_equal(with_nan, expected)


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize(("kernel", "shape"), TILING, ids=[f"{k[0]}x{k[1]}" for k, _ in TILING])
def test_average_pool_windows_that_tile_the_plane(kernel: list[int], shape: list[int], include_pad: int) -> None:
    """Against onnxruntime, each window summed in the general path's order and divided by its count."""
    x = floats(*shape) * 100
    check("AveragePool", x, 1, kernel_shape=kernel, strides=kernel, count_include_pad=include_pad)


@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("shape, geometry", [
    ((2, 3, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((2, 3, 6, 7), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1], "ceil_mode": 1}),
    ((2, 2, 5, 6, 4), {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "dilations": [2, 1, 1]}),
])
def test_max_pool_indices(shape: tuple[int, ...], geometry: dict, order: int) -> None:
    check("MaxPool", floats(*shape), outputs=2, storage_order=order, **geometry)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_max_pool_integers(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 3, 6, 7), endpoint=True).astype(dtype)
    check("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    check("MaxPool", x, outputs=2, kernel_shape=[2, 2])
    check("MaxPool", x.reshape(2, 3, 6, 7, 1), kernel_shape=[2, 3, 1], auto_pad="SAME_UPPER")


@pytest.mark.parametrize("word, value", [(0, 3), (2, 0), (3, 2), (4, 2), (5, 0), (5, 9), (8, 0), (11, -1), (17, 0)])
def test_bad_parameters_are_refused(word: int, value: int) -> None:
    """Words of the general form (kind, count_include_pad, p, storage_order, nd, kernel, strides, pads, dilations)
    of a 3-D LpPool set out of range or to a size that does not match the output."""
    x = floats(1, 2, 5, 6, 4)
    data = bytearray(lower(pool_model("LpPool", x, kernel_shape=[2, 3, 2]), {"x": x.shape}))
    NativeSession(bytes(data))
    struct.pack_into("<i", data, header(bytes(data))["params"] + 4 * word, value)
    with pytest.raises(NativeError) as caught:
        NativeSession(bytes(data))
    assert caught.value.status == OP
