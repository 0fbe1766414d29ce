"""LpNormalization, Hardmax, Einsum, InstanceNormalization and LRN, each lowered as a few plan ops, on the cpu core
against onnxruntime; PRelu, one Binary op, on the cpu, wasm and neon (qemu) cores."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime


def single(op: str, shape: list[int], opset: int, **attributes: object) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attributes)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def compare(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"], run_onnxruntime(model, {"x": x})["y"]


@pytest.mark.parametrize(("p", "axis"), [(2, -1), (2, 0), (1, 1)])
def test_lp_normalization(p: int, axis: int) -> None:
    x = np.random.default_rng(p + axis).standard_normal((3, 4, 5)).astype(np.float32)
    actual, expected = compare(single("LpNormalization", [3, 4, 5], 17, p=p, axis=axis), x)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_lp_normalization_of_a_zero_vector_is_zero() -> None:
    x = np.zeros((2, 3), np.float32)
    x[1] = [3, 0, 4]
    actual = PROVIDERS["cpu"].compile(single("LpNormalization", [2, 3], 17), {}).run({"x": x})["y"]
    np.testing.assert_allclose(actual, [[0, 0, 0], [0.6, 0, 0.8]], rtol=1e-6)


@pytest.mark.parametrize(("opset", "axis"), [(13, -1), (13, 1), (11, 1), (11, 0)])
def test_hardmax_marks_the_first_maximum(opset: int, axis: int) -> None:
    x = np.random.default_rng(opset + axis % 3).integers(0, 4, (2, 3, 4)).astype(np.float32)  # ties: the first one wins
    actual, expected = compare(single("Hardmax", [2, 3, 4], opset, axis=axis), x)
    np.testing.assert_array_equal(actual, expected)


EQUATIONS = [
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores, as exporters write them
    ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),  # implicit output
    ("i,j->ij", [(3,), (4,)]),  # outer product
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("ijk->kj", [(3, 4, 5)]),  # sum and transpose
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bij,bjk->", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(len(equation))
    feeds = {f"x{k}": rng.standard_normal(shape).astype(np.float32) for k, shape in enumerate(shapes)}
    graph = helper.make_graph([helper.make_node("Einsum", list(feeds), ["y"], equation=equation)], "g",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, v.shape)
                               for name, v in feeds.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    actual = PROVIDERS["cpu"].compile(model, {}).run(feeds)["y"]
    expected = run_onnxruntime(model, feeds)["y"]
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 4, 7)])
def test_instance_normalization(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.normal(2.0, 3.0, shape).astype(np.float32)
    scale, bias = rng.standard_normal(shape[1]).astype(np.float32), rng.standard_normal(shape[1]).astype(np.float32)
    graph = helper.make_graph([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    actual, expected = compare(model, x)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("size", [1, 3, 4, 5])
def test_lrn_sums_squares_over_neighbouring_channels(size: int) -> None:
    """Against onnxruntime for odd sizes; for even ones, which onnxruntime refuses, against the schema's formula
    (onnx's ReferenceEvaluator walks the batch axis instead of the channels)."""
    x = np.random.default_rng(size).standard_normal((2, 6, 3, 4)).astype(np.float32)
    model = single("LRN", [2, 6, 3, 4], 13, size=size, alpha=0.01, beta=0.6, bias=2.0)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    if size % 2:
        expected = run_onnxruntime(model, {"x": x})["y"]
    else:
        sums = np.stack([(x[:, max(0, c - (size - 1) // 2):c + size // 2 + 1] ** 2).sum(axis=1) for c in range(6)], 1)
        expected = x / (2.0 + 0.01 / size * sums) ** 0.6
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


PRELU_SLOPES = {
    "per channel": np.array([[[0.25]], [[-0.5]], [[2.0]], [[0.0]]], np.float32),
    "one": np.array([0.1], np.float32),
    "per element": np.linspace(-1, 1, 4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6),
}


@pytest.mark.parametrize("slope", list(PRELU_SLOPES))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_prelu_is_one_pass(provider: str, slope: str) -> None:
    """x < 0 ? x * slope : x, on values with -0, NaN and infinities, each slope broadcast to x (1, 4, 5, 6)."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    graph = helper.make_graph([helper.make_node("PRelu", ["x", "slope"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(PRELU_SLOPES[slope], "slope")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    assert [op.kind for op in lower_to_plan(model, {"x": (1, 4, 5, 6)}).ops] == ["Binary"]
    x = np.random.default_rng(5).standard_normal((1, 4, 5, 6)).astype(np.float32) * 3
    x.flat[:4] = [-0.0, np.nan, -np.inf, np.inf]
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=0)
