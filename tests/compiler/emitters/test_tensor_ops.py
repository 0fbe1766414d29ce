"""The scalar Mul and Add after a fused HardSwish (PP-LCNetV3's learnable affine block) fold into the op's activation,
HardSwishAffine: where they fold, and the results of the cpu, wasm and neon (qemu) cores against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native.epk import ACTIVATIONS
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

SHAPE = [1, 6, 11, 13]


def affine_after_hardswish(steps: list[tuple[str, np.ndarray]], op: str = "Conv", shape: list[int] | None = None,
                           channels: int = 8) -> onnx.ModelProto:
    """x -> Conv (3x3, 6 -> `channels`), MatMul or Gemm (transB; 13 -> 8 columns) -> HardSwish -> each (Mul or Add,
    constant)."""
    rng = np.random.default_rng(len(steps))
    if op == "Conv":
        weights = {"w": rng.standard_normal((channels, 6, 3, 3)).astype(np.float32) * 0.3,
                   "b": rng.standard_normal(channels).astype(np.float32)}
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])]
    elif op == "MatMul":
        weights = {"w": rng.standard_normal((13, 8)).astype(np.float32) * 0.3}
        nodes = [helper.make_node("MatMul", ["x", "w"], ["c"])]
    else:
        weights = {"w": rng.standard_normal((8, 13)).astype(np.float32) * 0.3}
        nodes = [helper.make_node("Gemm", ["x", "w"], ["c"], transB=1)]
    nodes.append(helper.make_node("HardSwish", ["c"], ["h0"]))
    for k, (kind, value) in enumerate(steps):
        weights[f"k{k}"] = value
        nodes.append(helper.make_node(kind, [f"h{k}", f"k{k}"], ["y" if k == len(steps) - 1 else f"h{k + 1}"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape or SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def scalar(value: float, shape: tuple[int, ...] = (1,)) -> np.ndarray:
    return np.full(shape, value, np.float32)


FOLDED = {
    "scale then shift": [("Mul", scalar(0.75)), ("Add", scalar(-0.4))],
    "shift then scale": [("Add", scalar(0.3)), ("Mul", scalar(1.5, ()))],
    "scale only": [("Mul", scalar(-2.0, (1, 1, 1, 1)))],
}


NARROW = [1, 6, 4, 5]
"""20 output positions, under a panel's columns, by 72 output channels: the conv's narrow form (dot products)."""


@pytest.mark.parametrize("shape", [SHAPE, NARROW], ids=["panels", "narrow"])
@pytest.mark.parametrize("case", list(FOLDED))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_scalar_affine_after_hardswish_folds_into_the_conv(provider: str, case: str, shape: list[int]) -> None:
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    model = affine_after_hardswish(FOLDED[case], shape=shape, channels=72 if shape == NARROW else 8)
    plan = lower_to_plan(model, {"x": shape})
    assert [op.kind for op in plan.ops] == ["Conv"]
    assert plan.ops[0].params[12] == ACTIVATIONS["HardSwishAffine"]
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 3
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize(("shape", "op", "kind"), [(SHAPE, "MatMul", "PackedMatMul"), ([3, 13], "Gemm", "Gemm")],
                         ids=["packed panels", "a few rows"])
def test_a_product_takes_the_affine_too(shape: list[int], op: str, kind: str) -> None:
    model = affine_after_hardswish(FOLDED["scale then shift"], op=op, shape=shape)
    plan = lower_to_plan(model, {"x": shape})
    assert [op.kind for op in plan.ops] == [kind]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32) * 3
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


KEPT = {
    "a scale per channel": [("Mul", np.linspace(0.5, 1.5, 8, dtype=np.float32).reshape(1, 8, 1, 1))],
    "a scalar of higher rank than x": [("Mul", scalar(0.5, (1, 1, 1, 1, 1)))],
    "a Sub": [("Sub", scalar(0.5))],
}


@pytest.mark.parametrize("case", list(KEPT))
def test_other_products_and_sums_stay_binary(case: str) -> None:
    kinds = [op.kind for op in lower_to_plan(affine_after_hardswish(KEPT[case]), {"x": SHAPE}).ops]
    assert kinds == ["Conv", "Binary"]


def test_an_activation_other_than_hardswish_keeps_its_scale() -> None:
    model = affine_after_hardswish(FOLDED["scale only"])
    for node in model.graph.node:
        if node.op_type == "HardSwish":
            node.op_type = "Relu"
    assert [op.kind for op in lower_to_plan(model, {"x": SHAPE}).ops] == ["Conv", "Binary"]


def linear(bias: np.ndarray, bias_first: bool = False, then: str | None = None,
           int8_weight: bool = False) -> onnx.ModelProto:
    """x [2, 9, 20] -> MatMul by a constant 20 x 24 weight (float32, or int8 through DequantizeLinear) -> Add of
    `bias` (its first input with `bias_first`) -> optionally an activation."""
    rng = np.random.default_rng(int(bias.size))
    weight = rng.standard_normal((20, 24)).astype(np.float32)
    initializers = {"bias": bias}
    nodes = []
    if int8_weight:
        initializers.update(q=rng.integers(-127, 128, (20, 24)).astype(np.int8),
                            scale=np.full(24, 0.02, np.float32))
        nodes.append(helper.make_node("DequantizeLinear", ["q", "scale"], ["w"], axis=1))
    else:
        initializers["w"] = weight
    nodes.append(helper.make_node("MatMul", ["x", "w"], ["p"]))
    nodes.append(helper.make_node("Add", ["bias", "p"] if bias_first else ["p", "bias"], ["y" if not then else "s"]))
    if then:
        nodes.append(helper.make_node(then, ["s"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 9, 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


BIASES = {
    "x + bias": {"bias": np.linspace(-1, 1, 24, dtype=np.float32)},
    "bias + x, then Relu": {"bias": np.linspace(-1, 1, 24, dtype=np.float32), "bias_first": True, "then": "Relu"},
    "bias of shape 1 x 1 x N": {"bias": np.linspace(-1, 1, 24, dtype=np.float32).reshape(1, 1, 24)},
    "int8 weight": {"bias": np.linspace(-1, 1, 24, dtype=np.float32), "int8_weight": True},
}


@pytest.mark.parametrize("case", list(BIASES))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_a_bias_added_after_a_packed_product_goes_into_it(provider: str, case: str) -> None:
    """A Linear layer exported as MatMul and Add: one PackedMatMul with the bias (and a Relu after it) in its
    epilogue."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    model = linear(**BIASES[case])
    plan = lower_to_plan(model, {"x": (2, 9, 20)})
    assert [op.kind for op in plan.ops[plan.open_ops:]] == ["PackedMatMul"]
    x = np.random.default_rng(4).standard_normal((2, 9, 20)).astype(np.float32)
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("bias", [np.ones((9, 24), np.float32), np.ones((1, 1, 1, 24), np.float32)],
                         ids=["a bias per row", "a bias of higher rank than x"])
def test_other_sums_after_a_product_stay_binary(bias: np.ndarray) -> None:
    assert [op.kind for op in lower_to_plan(linear(bias), {"x": (2, 9, 20)}).ops] == ["PackedMatMul", "Binary"]


def projections(read_twice: bool = False) -> onnx.ModelProto:
    """Attention's Q, K and V projections as exported: three MatMuls of x, then the three bias Adds (so no Add
    follows its own MatMul); with `read_twice`, K's product is also a graph output."""
    rng = np.random.default_rng(7)
    names = ("q", "k", "v")
    initializers = {f"w{n}": rng.standard_normal((20, 24)).astype(np.float32) for n in names}
    initializers.update({f"b{n}": rng.standard_normal(24).astype(np.float32) for n in names})
    nodes = [helper.make_node("MatMul", ["x", f"w{n}"], [f"p{n}"]) for n in names]
    nodes += [helper.make_node("Add", [f"b{n}", f"p{n}"], [n]) for n in names]
    outputs = [*names, *(["pk"] if read_twice else [])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 9, 20])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_biases_added_after_later_products_still_go_into_their_own() -> None:
    model = projections()
    plan = lower_to_plan(model, {"x": (1, 9, 20)})
    assert [op.kind for op in plan.ops] == ["PackedMatMul"] * 3
    x = np.random.default_rng(5).standard_normal((1, 9, 20)).astype(np.float32)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    for name, expected in run_onnxruntime(model, {"x": x}).items():
        np.testing.assert_allclose(actual[name], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_a_product_read_by_more_than_its_bias_add_keeps_the_add() -> None:
    kinds = [op.kind for op in lower_to_plan(projections(read_twice=True), {"x": (1, 9, 20)}).ops]
    assert kinds.count("PackedMatMul") == 3 and kinds.count("Binary") == 1
