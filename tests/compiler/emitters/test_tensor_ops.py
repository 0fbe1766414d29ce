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
