"""Resize, Upsample and GridSample on the `cpu` provider against onnxruntime, on single-node models: every Resize
mode, nearest mode and coordinate transform, antialias, exclude_outside, cubic_coeff_a, axes, aspect-ratio policies,
roi with extrapolation; GridSample's modes, paddings and align_corners over 2 and 3 spatial axes. Within 1e-4 of the
output's scale."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(23)
TOLERANCE = 1e-4


def single_node(node: onnx.NodeProto, feeds: dict[str, np.ndarray], constants: dict[str, np.ndarray],
                opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def check(node: onnx.NodeProto, feeds: dict[str, np.ndarray], constants: dict[str, np.ndarray], opset: int,
          oracle: str = "onnxruntime") -> None:
    """Ours against onnxruntime, or onnx's reference where onnxruntime lacks the case."""
    model = single_node(node, feeds, constants, opset)
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    expected = run_onnxruntime(model, feeds)["y"] if oracle == "onnxruntime" else \
        ReferenceEvaluator(model).run(None, feeds)[0]
    assert ours.shape == expected.shape
    scale = max(float(np.abs(expected).max(initial=0.0)), 1.0)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=TOLERANCE * scale)


def resize(x_shape: tuple[int, ...], scales: list[float] | None = None, opset: int = 19, sizes: list[int] | None = None,
           roi: list[float] | None = None, **attributes: object) -> None:
    constants = {"roi": np.array(roi or [], np.float32), "scales": np.array(scales or [], np.float32)}
    if sizes is not None:
        constants["sizes"] = np.array(sizes, np.int64)
    node = helper.make_node("Resize", ["x", "roi", "scales", *(["sizes"] if sizes is not None else [])], ["y"],
                            **attributes)
    check(node, {"x": RNG.standard_normal(x_shape).astype(np.float32)}, constants, opset)


TRANSFORMS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 2.0, 1.6], [1, 1, 0.6, 0.8]])
def test_interpolating_modes(mode: str, transform: str, scales: list[float]) -> None:
    resize((2, 3, 10, 5), scales, mode=mode, coordinate_transformation_mode=transform)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_half_pixel_symmetric_inexact(mode: str) -> None:
    """Output lengths that the scales do not give exactly, where half_pixel_symmetric recenters."""
    resize((1, 2, 7, 5), [1, 1, 1.5, 0.7], mode=mode, coordinate_transformation_mode="half_pixel_symmetric")


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_nearest(nearest_mode: str, transform: str) -> None:
    resize((1, 2, 10, 5), [1, 1, 1.7, 0.8], mode="nearest", coordinate_transformation_mode=transform,
           nearest_mode=nearest_mode)


@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor"])
@pytest.mark.parametrize("transform", ["asymmetric", "half_pixel"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 3, 2], [1, 1, 2, 3]])
def test_nearest_upsampling_by_whole_factors(scales: list[float], transform: str, nearest_mode: str) -> None:
    """A detector's upsampling: rows that repeat the one above are copied, and columns each taken twice in turn (2x,
    where the mode picks them so) are written in pairs."""
    resize((2, 3, 6, 7), scales, mode="nearest", coordinate_transformation_mode=transform, nearest_mode=nearest_mode)


@pytest.mark.parametrize("exclude_outside", [0, 1])
@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_cubic_coefficients(a: float, exclude_outside: int) -> None:
    resize((1, 1, 6, 6), [1, 1, 1.8, 0.7], mode="cubic", cubic_coeff_a=a, exclude_outside=exclude_outside)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [[1, 2, 5, 4], [1, 2, 3, 11]])
def test_antialias(mode: str, sizes: list[int]) -> None:
    resize((1, 2, 12, 9), sizes=sizes, mode=mode, antialias=1)


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("axes", [[2, 3], [3, 2]])
def test_axes_and_aspect_ratio(policy: str, axes: list[int]) -> None:
    resize((1, 2, 6, 9), sizes=[4, 7] if axes == [2, 3] else [7, 4], axes=axes, keep_aspect_ratio_policy=policy,
           mode="linear")


def test_axes_with_scales() -> None:
    resize((2, 3, 5, 4), [1.5, 0.6], axes=[-1, 2], mode="cubic")


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_crop_and_resize(mode: str) -> None:
    resize((1, 1, 6, 7), sizes=[1, 1, 5, 4], roi=[0, 0, -0.2, 0.3, 1, 1, 0.7, 1.4], mode=mode,
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=3.5)


def test_trilinear() -> None:
    resize((1, 2, 3, 4, 5), [1, 1, 2.0, 0.5, 1.5], mode="linear")


@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.6, 2.5]])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opset_10(mode: str, scales: list[float]) -> None:
    resize_node = helper.make_node("Resize", ["x", "scales"], ["y"], mode=mode)
    check(resize_node, {"x": RNG.standard_normal((1, 2, 5, 4)).astype(np.float32)},
          {"scales": np.array(scales, np.float32)}, 10)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample(mode: str) -> None:
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode=mode)
    check(node, {"x": RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)},
          {"scales": np.array([1, 1, 2, 3], np.float32)}, 9)


def grid_sample(x_shape: tuple[int, ...], grid_shape: tuple[int, ...], opset: int, oracle: str = "onnxruntime",
                **attributes: object) -> None:
    """Samples with a grid that reaches past the input, except cubic with border padding: there onnxruntime reads
    past the border where onnx's reference (which we follow) first clamps the coordinate into the input."""
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attributes)
    reach = 1.0 if "cubic" in str(attributes["mode"]) and attributes["padding_mode"] == "border" else 1.3
    grid = RNG.uniform(-reach, reach, grid_shape).astype(np.float32)
    grid.reshape(-1)[:4] = [-1.0, 1.0, 0.0, -1.0]
    check(node, {"x": RNG.standard_normal(x_shape).astype(np.float32), "grid": grid}, {}, opset, oracle)


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode: str, padding: str, align_corners: int) -> None:
    grid_sample((2, 3, 5, 6), (2, 4, 7, 2), 16, mode=mode, padding_mode=padding, align_corners=align_corners)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d(mode: str, padding: str) -> None:
    grid_sample((1, 2, 3, 4, 5), (1, 2, 3, 4, 3), 20, mode=mode, padding_mode=padding, align_corners=1)


def test_grid_sample_cubic_opset_20() -> None:
    grid_sample((1, 2, 4, 4), (1, 3, 3, 2), 20, mode="cubic", padding_mode="border")


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
def test_grid_sample_1d(mode: str, padding: str) -> None:
    """One spatial axis, which onnxruntime does not take: against onnx's reference."""
    grid_sample((2, 3, 6), (2, 9, 1), 20, "reference", mode=mode, padding_mode=padding, align_corners=0)


def test_grid_sample_3d_cubic() -> None:
    """Cubic over three spatial axes, which onnxruntime does not take: against onnx's reference."""
    grid_sample((1, 2, 3, 4, 4), (1, 2, 2, 3, 3), 20, "reference", mode="cubic", padding_mode="reflection")
