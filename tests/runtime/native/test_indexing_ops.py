"""GatherElements, GatherND, ScatterElements (and opset 10's Scatter), ScatterND, Trilu, CumSum, CumProd, Tile,
OneHot, Compress, NonZero and EyeLike on the `cpu` provider against onnxruntime (onnx's ReferenceEvaluator for CumProd,
which onnxruntime lacks), on single-node models: exact for integers and data movement, within 1e-5 relative for float
sums; an index out of range is an error, not a crash."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS

RNG = np.random.default_rng(7)


def single_node(op: str, feeds: dict[str, np.ndarray], constants: dict[str, np.ndarray] | None = None,
                opset: int = 18, **attributes: object) -> onnx.ModelProto:
    """A model of one `op` node reading `feeds` (model inputs) then `constants` (initializers), in that order."""
    constants = constants or {}
    node = helper.make_node(op, [*feeds, *constants], ["y"], **attributes)
    inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for name, v in feeds.items()]
    graph = helper.make_graph([node], "g", inputs, [helper.make_value_info("y", onnx.TypeProto())],
                              [numpy_helper.from_array(np.asarray(v), name) for name, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The output of the cpu provider and of onnxruntime."""
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return ours, session.run(["y"], feeds)[0]


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 0.0) -> None:
    """The cpu provider agrees with onnxruntime: exactly, or within `rtol` of the output's scale."""
    ours, expected = run_both(model, feeds)
    assert ours.dtype == expected.dtype and ours.shape == expected.shape
    if rtol:
        np.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol * float(np.abs(expected).max(initial=1.0)))
    else:
        np.testing.assert_array_equal(ours, expected)


def data(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """Random values of `dtype`: normal floats, small integers, random bools."""
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype == "float32":
        return RNG.standard_normal(shape).astype(np.float32)
    return RNG.integers(-50, 50, shape).astype(dtype) if dtype != "uint8" else RNG.integers(0, 200, shape, np.uint8)


def indices(shape: tuple[int, ...], dim: int, dtype: str = "int64") -> np.ndarray:
    """Indices in [-dim, dim), negative ones included."""
    return RNG.integers(-dim, dim, shape).astype(dtype)


@pytest.mark.parametrize(("shape", "index_shape", "axis", "dtype", "index_dtype"), [
    ((3, 4), (2, 4), 0, "float32", "int64"), ((3, 4), (3, 5), 1, "float32", "int32"),
    ((2, 3, 4), (2, 2, 3), -1, "int64", "int64"), ((2, 3, 4), (2, 6, 4), 1, "uint8", "int32"),
    ((5,), (7,), 0, "bool", "int64"), ((2, 3, 4), (1, 3, 2), 0, "int32", "int64")])
def test_gather_elements(shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, dtype: str,
                         index_dtype: str) -> None:
    feeds = {"x": data(shape, dtype), "i": indices(index_shape, shape[axis], index_dtype)}
    check(single_node("GatherElements", feeds, axis=axis), feeds)


@pytest.mark.parametrize(("shape", "index_shape", "batch_dims", "dtype"), [
    ((3, 4), (5, 2), 0, "float32"), ((3, 4, 2), (2, 3, 1), 0, "int64"), ((2, 3, 4), (2, 2), 1, "float32"),
    ((2, 3, 4, 2), (2, 3, 5, 1), 2, "int32"), ((4, 3), (1,), 0, "bool"), ((2, 3, 4), (2, 4, 2), 1, "uint8")])
def test_gather_nd(shape: tuple[int, ...], index_shape: tuple[int, ...], batch_dims: int, dtype: str) -> None:
    m = index_shape[-1]
    columns = [indices(index_shape[:-1] + (1,), shape[batch_dims + j]) for j in range(m)]
    feeds = {"x": data(shape, dtype), "i": np.concatenate(columns, axis=-1)}
    check(single_node("GatherND", feeds, batch_dims=batch_dims), feeds)


def distinct_along(shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, dtype: str) -> np.ndarray:
    """Scatter indices that never write one element twice: a permutation's first entries along the axis, half of them
    negative."""
    moved = np.moveaxis(np.zeros(index_shape, np.int64), axis, -1)
    dim = shape[axis]
    for position in np.ndindex(moved.shape[:-1]):
        picked = RNG.permutation(dim)[:moved.shape[-1]]
        moved[position] = np.where(RNG.integers(0, 2, picked.shape) == 1, picked - dim, picked)
    return np.moveaxis(moved, -1, axis).astype(dtype)


@pytest.mark.parametrize(("shape", "index_shape", "axis", "dtype", "reduction"), [
    ((3, 4), (2, 4), 0, "float32", "none"), ((3, 4), (3, 2), -1, "int64", "none"),
    ((2, 3, 4), (2, 3, 4), 1, "float32", "add"), ((2, 3, 4), (2, 2, 4), 2, "int32", "mul"),
    ((4, 5), (4, 3), 1, "float32", "max"), ((4, 5), (2, 5), 0, "int64", "min"), ((6,), (3,), 0, "bool", "none")])
def test_scatter_elements(shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, dtype: str,
                          reduction: str) -> None:
    index_dtype = "int32" if dtype == "int64" else "int64"
    feeds = {"x": data(shape, dtype), "i": distinct_along(shape, index_shape, axis, index_dtype),
             "u": data(index_shape, dtype)}
    check(single_node("ScatterElements", feeds, axis=axis, reduction=reduction), feeds)


def test_scatter_elements_adds_duplicates() -> None:
    feeds = {"x": data((3, 4)), "i": np.array([[0, -3, 2, 2], [0, 0, -1, 2]]), "u": data((2, 4))}
    check(single_node("ScatterElements", feeds, axis=0, reduction="add"), feeds, rtol=1e-5)


def test_opset_10_scatter() -> None:
    feeds = {"x": data((3, 5)), "i": distinct_along((3, 5), (3, 2), 1, "int64"), "u": data((3, 2))}
    check(single_node("Scatter", feeds, opset=10, axis=1), feeds)


@pytest.mark.parametrize(("shape", "index_shape", "dtype", "reduction"), [
    ((4, 3), (2, 1), "float32", "none"), ((4, 3), (3, 2), "int64", "none"), ((2, 3, 4), (2, 2), "float32", "add"),
    ((2, 3, 4), (2, 1), "int32", "mul"), ((5,), (3, 1), "float32", "max"), ((3, 4), (2, 2), "int64", "min")])
def test_scatter_nd(shape: tuple[int, ...], index_shape: tuple[int, ...], dtype: str, reduction: str) -> None:
    m = index_shape[-1]
    tuples = np.array(list(np.ndindex(shape[:m])))[RNG.permutation(int(np.prod(shape[:m])))[:index_shape[0]]]
    tuples = np.where(RNG.integers(0, 2, tuples.shape) == 1, tuples - np.array(shape[:m]), tuples)
    feeds = {"x": data(shape, dtype), "i": tuples.astype(np.int64), "u": data(index_shape[:-1] + shape[m:], dtype)}
    check(single_node("ScatterND", feeds, reduction=reduction), feeds)


@pytest.mark.parametrize(("shape", "upper", "k", "dtype"), [
    ((4, 5), 1, 0, "float32"), ((4, 5), 0, 0, "float32"), ((3, 4, 5), 1, -2, "int64"), ((3, 4, 5), 0, 2, "int64"),
    ((5, 3), 1, 7, "float32"), ((5, 3), 0, -9, "float32"), ((2, 6, 6), 0, 1, "bool"), ((1, 4), 1, -1, "float32")])
def test_trilu(shape: tuple[int, ...], upper: int, k: int, dtype: str) -> None:
    feeds = {"x": data(shape, dtype)}
    check(single_node("Trilu", feeds, {"k": np.array(k, np.int64)}, upper=upper), feeds)


@pytest.mark.parametrize(("shape", "axis", "exclusive", "reverse", "dtype"), [
    ((7,), 0, 0, 0, "float32"), ((3, 5), 1, 1, 0, "float32"), ((3, 5), 0, 0, 1, "float32"),
    ((2, 3, 4), -2, 1, 1, "float32"), ((2, 3, 4), 2, 0, 0, "int64"), ((4, 6), -1, 1, 1, "int32"),
    ((64, 3), 0, 0, 0, "float32")])
def test_cumsum(shape: tuple[int, ...], axis: int, exclusive: int, reverse: int, dtype: str) -> None:
    feeds = {"x": data(shape, dtype)}
    model = single_node("CumSum", feeds, {"axis": np.array(axis, np.int32)}, exclusive=exclusive, reverse=reverse)
    check(model, feeds, rtol=1e-5 if dtype == "float32" else 0.0)


@pytest.mark.parametrize(("shape", "repeats", "dtype"), [
    ((2, 3), (2, 3), "float32"), ((2, 3, 4), (1, 2, 1), "int64"), ((5,), (4,), "uint8"),
    ((2, 1, 3), (3, 4, 2), "bool"), ((3, 2), (1, 1), "int32"), ((2, 3), (0, 2), "float32")])
def test_tile(shape: tuple[int, ...], repeats: tuple[int, ...], dtype: str) -> None:
    feeds = {"x": data(shape, dtype)}
    check(single_node("Tile", feeds, {"repeats": np.array(repeats, np.int64)}), feeds)


@pytest.mark.parametrize(("index_shape", "depth", "axis", "index_dtype", "value_dtype", "depth_dtype"), [
    ((4,), 5, -1, "int64", "float32", "int64"), ((2, 3), 4, 0, "int64", "int64", "int64"),
    ((2, 3), 6, 1, "int32", "float32", "int32"), ((3, 2), 3, -2, "float32", "float32", "float32"),
    ((5,), 3, 0, "int64", "int32", "float32")])
def test_one_hot(index_shape: tuple[int, ...], depth: int, axis: int, index_dtype: str, value_dtype: str,
                 depth_dtype: str) -> None:
    picked = RNG.integers(-depth - 2, depth + 2, index_shape)  # out of range ones give all-off rows
    feeds = {"i": picked.astype(index_dtype)}
    constants = {"depth": np.array(depth, depth_dtype), "values": np.array([2, 7], value_dtype)}
    check(single_node("OneHot", feeds, constants, axis=axis), feeds)


@pytest.mark.parametrize(("op", "feeds"), [
    ("GatherElements", {"x": data((3, 4)), "i": np.array([[0, 1, 3, 1]])}),
    ("GatherND", {"x": data((3, 4)), "i": np.array([[1, 2], [-4, 0]])}),
    ("ScatterElements", {"x": data((3, 4)), "i": np.array([[5, 0, 0, 0]], np.int32), "u": data((1, 4))}),
    ("ScatterND", {"x": data((3, 4)), "i": np.array([[3]]), "u": data((1, 4))})])
def test_an_index_out_of_range_is_an_error(op: str, feeds: dict[str, np.ndarray]) -> None:
    session = PROVIDERS["cpu"].compile(single_node(op, feeds, axis=0) if "Elements" in op else
                                       single_node(op, feeds), {})
    with pytest.raises(EdgepackError, match=f"{op}: index out of range"):
        session.run(feeds)


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_cum_prod(dtype: str, exclusive: int, reverse: int) -> None:
    x = (RNG.integers(1, 4, (3, 5)) * RNG.choice([-1, 1], (3, 5))).astype(dtype)
    model = single_node("CumProd", {"x": x}, {"axis": np.array(1, np.int64)}, opset=26, exclusive=exclusive,
                        reverse=reverse)
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]  # onnxruntime has no CumProd kernel yet
    assert ours.dtype == expected.dtype
    np.testing.assert_allclose(ours, expected, rtol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_selects_what_the_condition_names(axis: int | None) -> None:
    """The condition is a model input: the plan is lowered for its value and guarded."""
    x = data((3, 4))
    condition = np.array([True, False, True] if axis == 0 else [False, True, True, False], bool)
    attributes = {} if axis is None else {"axis": axis}
    check(single_node("Compress", {"x": x, "condition": condition}, **attributes), {"x": x, "condition": condition})


def test_non_zero_and_eye_like_of_known_values() -> None:
    x = np.array([[0, 2, 0], [1, 0, 3]], np.int32)
    check(single_node("NonZero", {"x": x}), {"x": x})
    y = data((3, 5))
    check(single_node("EyeLike", {"x": y}, k=1, dtype=onnx.TensorProto.INT64), {"x": y})


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_unique_of_a_known_input(axis: int | None) -> None:
    x = RNG.integers(0, 3, (4, 3)).astype(np.int64)
    attributes = {} if axis is None else {"axis": axis}
    model = single_node("Unique", {"x": x}, opset=11, **attributes)
    outputs = [helper.make_value_info(name, onnx.TypeProto()) for name in ("y", "indices", "inverse", "counts")]
    model.graph.node[0].output[:] = ["y", "indices", "inverse", "counts"]
    del model.graph.output[:]
    model.graph.output.extend(outputs)
    ours = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, expected in zip(["y", "indices", "inverse", "counts"], session.run(None, {"x": x})):
        np.testing.assert_array_equal(ours[name], expected, err_msg=name)
