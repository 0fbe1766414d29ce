"""The lowering's graph rewrites (compiler/patterns.py): HardSwish written out as x * clip(x + 3, 0, 6) / 6 or as
x * HardSigmoid(x) (alpha 1/6, beta 1/2) becomes one HardSwish that folds into the Conv before it; x * Sigmoid(x)
becomes one Swish; x * 0.5 * (1 + erf(x / sqrt(2))) becomes one Gelu, and its tanh form one GeluTanh; near misses
stay as they are. Results against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native.epk import ACTIVATIONS, BINARY, UNARY
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

SHAPE = [1, 4, 9, 10]


def conv_then(nodes: list[onnx.NodeProto], constants: dict[str, np.ndarray]) -> onnx.ModelProto:
    """x -> Conv (3x3, 4 -> 6 channels) -> c, then `nodes`, which end in y."""
    rng = np.random.default_rng(len(nodes))
    constants = {"w": rng.standard_normal((6, 4, 3, 3)).astype(np.float32) * 0.4,
                 "b": rng.standard_normal(6).astype(np.float32), **constants}
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), *nodes], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def scalar(value: float) -> np.ndarray:
    return np.array(value, np.float32)


def clip_form() -> onnx.ModelProto:
    return conv_then([helper.make_node("Add", ["c", "three"], ["shifted"]),
                      helper.make_node("Clip", ["shifted", "zero", "six"], ["clipped"]),
                      helper.make_node("Mul", ["c", "clipped"], ["product"]),
                      helper.make_node("Div", ["product", "six"], ["y"])],
                     {"three": scalar(3.0), "zero": scalar(0.0), "six": scalar(6.0)})


def gate_form(alpha: float = 1.0 / 6.0, beta: float = 0.5, gate_first: bool = True) -> onnx.ModelProto:
    inputs = ["gate", "c"] if gate_first else ["c", "gate"]
    return conv_then([helper.make_node("HardSigmoid", ["c"], ["gate"], alpha=alpha, beta=beta),
                      helper.make_node("Mul", inputs, ["y"])], {})


def learnable_affine_block() -> onnx.ModelProto:
    """PaddleOCR v5's LCNetV3 block as exported: HardSigmoid gate, then a scalar scale and shift."""
    return conv_then([helper.make_node("HardSigmoid", ["c"], ["gate"], alpha=1.0 / 6.0, beta=0.5),
                      helper.make_node("Mul", ["gate", "c"], ["swished"]),
                      helper.make_node("Mul", ["scale", "swished"], ["scaled"]),
                      helper.make_node("Add", ["scaled", "shift"], ["y"])],
                     {"scale": np.array([1.25], np.float32), "shift": np.array([-0.2], np.float32)})


FUSED = {
    "x * clip(x + 3, 0, 6) / 6": (clip_form, "HardSwish"),
    "HardSigmoid(x) * x": (gate_form, "HardSwish"),
    "x * HardSigmoid(x)": (lambda: gate_form(gate_first=False), "HardSwish"),
    "HardSigmoid(x) * x, then scale and shift": (learnable_affine_block, "HardSwishAffine"),
}


@pytest.mark.parametrize("case", list(FUSED))
def test_hard_swish_written_out_folds_into_the_conv(case: str) -> None:
    build, activation = FUSED[case]
    model = build()
    plan = lower_to_plan(model, {"x": SHAPE})
    assert [op.kind for op in plan.ops] == ["Conv"]
    assert plan.ops[0].params[12] == ACTIVATIONS[activation]
    x = np.random.default_rng(11).standard_normal(SHAPE).astype(np.float32) * 4
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_a_gate_read_twice_stays() -> None:
    model = gate_form()
    model.graph.node.append(helper.make_node("Add", ["y", "gate"], ["z"]))
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    assert "Unary" in [op.kind for op in lower_to_plan(model, {"x": SHAPE}).ops]


@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.5), (1.0 / 6.0, 0.4)], ids=["alpha 0.2", "beta 0.4"])
def test_another_hard_sigmoid_is_not_hard_swish(alpha: float, beta: float) -> None:
    kinds = [op.kind for op in lower_to_plan(gate_form(alpha, beta), {"x": SHAPE}).ops]
    assert kinds == ["Conv", "Unary", "Binary"]


def silu_form(gate_first: bool = True, gated: str = "c") -> onnx.ModelProto:
    """Conv, then c * Sigmoid(gated) (SiLU when `gated` is c; d is c + 1)."""
    inputs = ["gate", "c"] if gate_first else ["c", "gate"]
    return conv_then([helper.make_node("Add", ["c", "one"], ["d"]), helper.make_node("Sigmoid", [gated], ["gate"]),
                      helper.make_node("Mul", inputs, ["y"])], {"one": scalar(1.0)})


@pytest.mark.parametrize("gate_first", [True, False], ids=["Sigmoid(x) * x", "x * Sigmoid(x)"])
def test_silu_written_out_becomes_one_swish(gate_first: bool) -> None:
    model = silu_form(gate_first)
    plan = lower_to_plan(model, {"x": SHAPE})
    assert [(op.kind, op.params[0]) for op in plan.ops if op.kind != "Conv"] == [("Binary", BINARY["Add"]),
                                                                                ("Unary", UNARY["Swish"])]
    x = np.random.default_rng(12).standard_normal(SHAPE).astype(np.float32) * 8
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("gate_first", [True, False], ids=["Sigmoid(x) * x", "x * Sigmoid(x)"])
def test_silu_of_a_conv_folds_into_it(gate_first: bool) -> None:
    inputs = ["gate", "c"] if gate_first else ["c", "gate"]
    model = conv_then([helper.make_node("Sigmoid", ["c"], ["gate"]), helper.make_node("Mul", inputs, ["y"])], {})
    plan = lower_to_plan(model, {"x": SHAPE})
    assert [op.kind for op in plan.ops] == ["Conv"]
    assert plan.ops[0].params[12] == ACTIVATIONS["Swish"]
    x = np.random.default_rng(13).standard_normal(SHAPE).astype(np.float32) * 8
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_a_sigmoid_read_twice_or_of_another_tensor_stays() -> None:
    read_twice = silu_form()
    read_twice.graph.node.append(helper.make_node("Add", ["y", "gate"], ["z"]))
    read_twice.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    for model in read_twice, silu_form(gated="d"):
        kinds = [(op.kind, op.params[0]) for op in lower_to_plan(model, {"x": SHAPE}).ops if op.kind != "Conv"]
        assert ("Unary", UNARY["Sigmoid"]) in kinds and ("Unary", UNARY["Swish"]) not in kinds


def gelu_form(association: str, scale: str = "Div", half: float = 0.5) -> onnx.ModelProto:
    """Conv, then c * `half` * (1 + erf(c / sqrt(2))): its products associated as `association` says, c / sqrt(2) as
    a Div or (scale "Mul") a Mul by 1 / sqrt(2)."""
    scaled = helper.make_node("Div", ["c", "root2"], ["s"]) if scale == "Div" else \
        helper.make_node("Mul", ["inverse_root2", "c"], ["s"])
    return gelu_products(association, [scaled, helper.make_node("Erf", ["s"], ["e"])],
                         {"root2": scalar(np.sqrt(2.0)), "inverse_root2": scalar(np.sqrt(0.5))}, half)


def gelu_products(association: str, gate: list[onnx.NodeProto], constants: dict[str, np.ndarray],
                  half: float = 0.5) -> onnx.ModelProto:
    """Conv, then `gate` (which writes e), then c * `half` * (1 + e), its products associated as `association` says
    (named with erf)."""
    nodes = [*gate, helper.make_node("Add", ["one", "e"], ["a"])]
    first, second = {"(x * (1 + erf)) * 0.5": (["c", "a"], ["m", "half"]),
                     "x * ((1 + erf) * 0.5)": (["half", "a"], ["c", "m"]),
                     "(x * 0.5) * (1 + erf)": (["c", "half"], ["a", "m"])}[association]
    nodes += [helper.make_node("Mul", first, ["m"]), helper.make_node("Mul", second, ["y"])]
    return conv_then(nodes, {**constants, "one": scalar(1.0), "half": scalar(half)})


def gelu_tanh_form(association: str, cube: str, coefficient: float = 0.044715, power: float = 3.0) -> onnx.ModelProto:
    """Conv, then c * 0.5 * (1 + tanh(sqrt(2 / pi) * (c + coefficient * c^3))): c^3 as jax2tf writes it (c * (c *
    (coefficient * c)), cube "Mul") or as PyTorch's does (coefficient * Pow(c, `power`), cube "Pow")."""
    if cube == "Mul":
        powers = [helper.make_node("Mul", ["k", "c"], ["c1"]), helper.make_node("Mul", ["c", "c1"], ["c2"]),
                  helper.make_node("Mul", ["c", "c2"], ["c3"])]
    else:
        powers = [helper.make_node("Pow", ["c", "three"], ["p"]), helper.make_node("Mul", ["p", "k"], ["c3"])]
    gate = [*powers, helper.make_node("Add", ["c", "c3"], ["inner"]),
            helper.make_node("Mul", ["root", "inner"], ["s"]), helper.make_node("Tanh", ["s"], ["e"])]
    return gelu_products(association, gate, {"k": scalar(coefficient), "three": scalar(power),
                                             "root": scalar(np.sqrt(2.0 / np.pi))})


GELU_FORMS = {
    "(x * (1 + erf)) * 0.5, Div": (lambda: gelu_form("(x * (1 + erf)) * 0.5", "Div"), "Gelu"),
    "x * ((1 + erf) * 0.5), Mul": (lambda: gelu_form("x * ((1 + erf) * 0.5)", "Mul"), "Gelu"),
    "(x * 0.5) * (1 + erf), Div": (lambda: gelu_form("(x * 0.5) * (1 + erf)", "Div"), "Gelu"),
    "(x * (1 + tanh)) * 0.5, x^3 by Muls": (lambda: gelu_tanh_form("(x * (1 + erf)) * 0.5", "Mul"), "GeluTanh"),
    "x * ((1 + tanh) * 0.5), x^3 by Pow": (lambda: gelu_tanh_form("x * ((1 + erf) * 0.5)", "Pow"), "GeluTanh"),
    "(x * 0.5) * (1 + tanh), x^3 by Muls": (lambda: gelu_tanh_form("(x * 0.5) * (1 + erf)", "Mul"), "GeluTanh"),
}


@pytest.mark.parametrize("form", list(GELU_FORMS))
def test_gelu_written_out_becomes_one_unary(form: str) -> None:
    build, kind = GELU_FORMS[form]
    model = build()
    plan = lower_to_plan(model, {"x": SHAPE})
    assert [(op.kind, op.params[0]) for op in plan.ops if op.kind != "Conv"] == [("Unary", UNARY[kind])]
    x = np.random.default_rng(13).standard_normal(SHAPE).astype(np.float32) * 4
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_another_coefficient_or_power_or_a_cube_read_twice_stays() -> None:
    read_twice = gelu_tanh_form("(x * (1 + erf)) * 0.5", "Pow")
    read_twice.graph.node.append(helper.make_node("Add", ["y", "p"], ["z"]))
    read_twice.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    for model in (read_twice, gelu_tanh_form("(x * (1 + erf)) * 0.5", "Mul", coefficient=0.05),
                  gelu_tanh_form("(x * (1 + erf)) * 0.5", "Pow", power=2.0)):
        kinds = [(op.kind, op.params[0]) for op in lower_to_plan(model, {"x": SHAPE}).ops if op.kind != "Conv"]
        assert ("Unary", UNARY["Tanh"]) in kinds and ("Unary", UNARY["GeluTanh"]) not in kinds


def test_another_half_or_an_erf_read_twice_stays() -> None:
    read_twice = gelu_form("(x * (1 + erf)) * 0.5")
    read_twice.graph.node.append(helper.make_node("Add", ["y", "e"], ["z"]))
    read_twice.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    for model in read_twice, gelu_form("(x * 0.5) * (1 + erf)", half=0.6):
        kinds = [(op.kind, op.params[0]) for op in lower_to_plan(model, {"x": SHAPE}).ops if op.kind != "Conv"]
        assert ("Unary", UNARY["Erf"]) in kinds and ("Unary", UNARY["Gelu"]) not in kinds
