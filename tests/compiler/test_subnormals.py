"""Subnormal float32 weights of the matrix products are flushed to zero in the plan (compiler/subnormals.py): the
products' weights hold none, their normal values are kept bit for bit, other ops' constants are left as they are,
and the results still match onnxruntime on the source model."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native.epk import WEIGHT, Plan
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

TINY = np.finfo(np.float32).tiny
SHAPE = [1, 8, 6, 7]


def half_subnormal(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Normal weights with every other one replaced by a subnormal of either sign (as batch norms folded into a
    conv's weights leave them)."""
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal(shape).astype(np.float32)
    flat = weight.reshape(-1)
    flat[::2] = rng.choice([-1, 1], flat[::2].size) * rng.uniform(1, 1000, flat[::2].size) * np.float32(1e-41)
    return weight


def model_of(nodes: list[onnx.NodeProto], constants: dict[str, np.ndarray]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def weights_of(plan: Plan, kind: str) -> list[np.ndarray]:
    """The float32 weights the `kind` ops of `plan` read."""
    found = []
    for op in plan.ops:
        for index in op.inputs if op.kind == kind else []:
            tensor = plan.tensors[index] if index is not None else None
            if tensor is not None and tensor.location == WEIGHT and tensor.dtype == "float32":
                found.append(tensor.data)
    return found


def subnormals(array: np.ndarray) -> int:
    return int(np.count_nonzero((np.abs(array) < TINY) & (array != 0)))


def assert_matches_onnxruntime(model: onnx.ModelProto) -> None:
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_conv_weights_are_flushed_and_normal_ones_kept() -> None:
    weight = half_subnormal((5, 8, 3, 3), 1)
    model = model_of([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], {"w": weight})
    plan = lower_to_plan(model, {"x": SHAPE})
    [stored] = weights_of(plan, "Conv")
    assert subnormals(weight) == weight.size // 2 + weight.size % 2
    assert subnormals(stored) == 0
    normal = np.abs(weight) >= TINY
    np.testing.assert_array_equal(stored[normal], weight[normal])
    assert np.array_equal(np.signbit(stored[~normal]), np.signbit(weight[~normal]))
    assert not stored[~normal].any()
    assert_matches_onnxruntime(model)


def test_a_packed_matmul_weight_is_flushed() -> None:
    weight = half_subnormal((7, 40), 2)
    model = model_of([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight})
    plan = lower_to_plan(model, {"x": SHAPE})
    stored = weights_of(plan, "PackedMatMul")
    assert stored and all(subnormals(array) == 0 for array in stored)
    assert_matches_onnxruntime(model)


def test_a_shared_weight_is_stored_once() -> None:
    weight = half_subnormal((8, 8, 3, 3), 4)
    model = model_of([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                      helper.make_node("Conv", ["c", "w"], ["y"], pads=[1, 1, 1, 1])], {"w": weight})
    plan = lower_to_plan(model, {"x": SHAPE})
    assert len({id(array) for array in weights_of(plan, "Conv")}) == 1
    assert_matches_onnxruntime(model)


def test_the_constants_of_other_ops_are_kept() -> None:
    shift = np.full(SHAPE[1:], 3e-39, np.float32)
    model = model_of([helper.make_node("Add", ["x", "shift"], ["y"])], {"shift": shift})
    plan = lower_to_plan(model, {"x": SHAPE})
    [stored] = weights_of(plan, "Binary")
    assert subnormals(stored) == shift.size
