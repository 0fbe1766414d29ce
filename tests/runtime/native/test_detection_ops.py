"""RoiAlign, MaxUnpool and NonMaxSuppression on the `cpu` provider against onnxruntime, on single-node models:
RoiAlign within 1e-4 (avg and max modes, both coordinate transformations, adaptive and fixed sampling, opsets 10 and
16, regions partly outside the image); MaxUnpool and NonMaxSuppression exactly. MaxUnpool with an output_shape larger
than the pooled shape follows onnx's reference (the pooled shape at the output's corner), where onnxruntime reads
the indices in the larger shape instead. NonMaxSuppression's output length is the data's: its plan is lowered for
the values of boxes and scores (guarded), and the node must give max_output_boxes_per_class and iou_threshold. Bad
batch indices and unpooling indices are errors, not crashes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(5)
TOLERANCE = 1e-4


def single_node(op: str, feeds: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None,
                opset: int = 16, outputs: tuple[str, ...] = ("y",), **attributes: object) -> onnx.ModelProto:
    """A model of one `op` node reading `feeds` (model inputs) then `constants` (initializers), in that order."""
    constants = constants or {}
    node = helper.make_node(op, [*feeds, *constants], list(outputs), **attributes)
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for name, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_value_info(o, onnx.TypeProto()) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), name) for name, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tolerance: float = 0.0) -> None:
    """The cpu provider agrees with onnxruntime: exactly, or within `tolerance` (absolute and relative)."""
    got, expected = ours(model, feeds), run_onnxruntime(model, feeds)["y"]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def regions(count: int, size: float) -> np.ndarray:
    """Random boxes (x1, y1, x2, y2) over a size x size image, some reaching past its edges, one degenerate and one
    with its corners swapped."""
    corners = RNG.uniform(-0.2 * size, 1.1 * size, (count, 2))
    extents = RNG.uniform(0.5, 0.6 * size, (count, 2))
    boxes = np.concatenate([corners, corners + extents], axis=1).astype(np.float32)
    boxes[0] = [2.0, 3.0, 2.0, 3.0]
    boxes[1] = [9.0, 8.0, 3.0, 2.5]
    return boxes


@pytest.mark.parametrize("opset", [10, 16])
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
def test_roi_align(opset: int, mode: str, sampling_ratio: int) -> None:
    x = RNG.standard_normal((2, 3, 10, 12)).astype(np.float32)
    rois = regions(6, 20.0)
    batch_indices = np.array([0, 1, 1, 0, 1, 0], np.int64)
    transforms = ["output_half_pixel"] if opset < 16 else ["half_pixel", "output_half_pixel"]
    for transform in transforms:
        extra = {} if opset < 16 else {"coordinate_transformation_mode": transform}
        model = single_node("RoiAlign", {"x": x, "rois": rois, "batch_indices": batch_indices}, opset=opset,
                            mode=mode, output_height=3, output_width=4, sampling_ratio=sampling_ratio,
                            spatial_scale=0.5, **extra)
        check(model, {"x": x, "rois": rois, "batch_indices": batch_indices}, TOLERANCE)


def test_roi_align_defaults() -> None:
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    rois, batch_indices = np.array([[0.5, 1.0, 4.5, 5.0]], np.float32), np.zeros(1, np.int64)
    model = single_node("RoiAlign", {"x": x, "rois": rois, "batch_indices": batch_indices})
    check(model, {"x": x, "rois": rois, "batch_indices": batch_indices}, TOLERANCE)


def test_roi_align_refuses_a_batch_index_out_of_range() -> None:
    x = RNG.standard_normal((2, 1, 4, 4)).astype(np.float32)
    rois, batch_indices = np.array([[0, 0, 2, 2]], np.float32), np.array([2], np.int64)
    model = single_node("RoiAlign", {"x": x, "rois": rois, "batch_indices": batch_indices})
    with pytest.raises(EdgepackError):
        ours(model, {"x": x, "rois": rois, "batch_indices": batch_indices})


def pooled_with_indices(x: np.ndarray, **attributes: object) -> tuple[np.ndarray, np.ndarray]:
    """MaxPool's values and indices of x, from onnxruntime."""
    model = single_node("MaxPool", {"x": x}, outputs=("y", "i"), opset=12, **attributes)
    result = run_onnxruntime(model, {"x": x})
    return result["y"], result["i"]


@pytest.mark.parametrize("shape, attributes", [
    ((2, 3, 6, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((1, 2, 7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 2, 9), {"kernel_shape": [3], "strides": [3]}),
    ((1, 1, 5, 5), {"kernel_shape": [2, 2]}),
])
def test_max_unpool(shape: tuple[int, ...], attributes: dict[str, object]) -> None:
    values, indices = pooled_with_indices(RNG.standard_normal(shape).astype(np.float32), **attributes)
    model = single_node("MaxUnpool", {"x": values, "i": indices}, opset=11, **attributes)
    check(model, {"x": values, "i": indices})


def test_max_unpool_output_shape() -> None:
    """An output_shape equal to the pooled shape changes nothing (onnxruntime agrees); a larger one holds the pooled
    shape at its corner (onnx's reference, which the node tests follow)."""
    values, indices = pooled_with_indices(RNG.standard_normal((1, 2, 4, 6)).astype(np.float32), kernel_shape=[2, 2],
                                          strides=[2, 2])
    feeds = {"x": values, "i": indices}
    check(single_node("MaxUnpool", feeds, {"s": np.array([1, 2, 4, 6], np.int64)}, opset=11, kernel_shape=[2, 2],
                      strides=[2, 2]), feeds)
    model = single_node("MaxUnpool", feeds, {"s": np.array([1, 2, 5, 7], np.int64)}, opset=11, kernel_shape=[2, 2],
                        strides=[2, 2])
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    assert np.count_nonzero(expected[:, :, 4:, :]) == 0 and np.count_nonzero(expected) > 0
    np.testing.assert_array_equal(ours(model, feeds), expected)


def test_max_unpool_refuses_an_index_out_of_range() -> None:
    values, indices = np.ones((1, 1, 2, 2), np.float32), np.array([[[[0, 1, 2, 16]]]], np.int64).reshape(1, 1, 2, 2)
    model = single_node("MaxUnpool", {"x": values, "i": indices}, opset=11, kernel_shape=[2, 2], strides=[2, 2])
    with pytest.raises(EdgepackError):
        ours(model, {"x": values, "i": indices})


def boxes_and_scores(batches: int, classes: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping corner boxes (some given with corners swapped) and scores with ties."""
    corners = RNG.uniform(0.0, 10.0, (batches, count, 2))
    boxes = np.concatenate([corners, corners + RNG.uniform(1.0, 4.0, (batches, count, 2))], axis=2)
    boxes[:, ::3] = boxes[:, ::3][..., [2, 3, 0, 1]]
    scores = RNG.integers(0, 20, (batches, classes, count)) / 20.0
    return boxes.astype(np.float32), scores.astype(np.float32)


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize("limits", [(2, 0.4), (10, 0.3, 0.5), (0, 0.5, 0.1), (5, 0.0, 0.3)])
def test_non_max_suppression(center_point_box: int, limits: tuple[float, ...]) -> None:
    """Boxes and scores are small model inputs (at most 64 elements): the plan is lowered for their values."""
    boxes, scores = boxes_and_scores(2, 3, 6)
    constants = {name: np.array([value], dtype) for name, value, dtype in
                 zip(("max_output", "iou", "score"), limits, (np.int64, np.float32, np.float32))}
    model = single_node("NonMaxSuppression", {"boxes": boxes, "scores": scores}, constants, opset=11,
                        center_point_box=center_point_box)
    check(model, {"boxes": boxes, "scores": scores})


def test_non_max_suppression_of_large_run_time_inputs_is_refused() -> None:
    """Over 64 boxes' values a plan per value makes no sense: the claim refuses the node."""
    boxes, scores = boxes_and_scores(2, 3, 12)
    model = single_node("NonMaxSuppression", {"boxes": boxes, "scores": scores},
                        {"max_output": np.array([3]), "iou": np.array([0.5], np.float32)}, opset=11)
    refusal = PROVIDERS["cpu"].capability.refusal(model.graph.node[0], model_opsets(model), graph_values(model.graph))
    assert refusal and "must be a constant" in refusal


def test_non_max_suppression_without_thresholds_is_refused() -> None:
    """onnx's reference, which computes the node when the plan is lowered, fails without max_output_boxes_per_class
    or iou_threshold: the claim refuses such nodes."""
    boxes, scores = boxes_and_scores(1, 1, 4)
    model = single_node("NonMaxSuppression", {"boxes": boxes, "scores": scores}, {"max_output": np.array([3])},
                        opset=11)
    refusal = PROVIDERS["cpu"].capability.refusal(model.graph.node[0], model_opsets(model), graph_values(model.graph))
    assert refusal and "iou_threshold must be given" in refusal
