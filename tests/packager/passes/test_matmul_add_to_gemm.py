"""matmul-add-to-gemm: 2-D MatMul + constant bias becomes Gemm; N-D stays."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import apply, branch, branches, check, if_node, info, init, model, ops, rand

PASS = "matmul-add-to-gemm"


@pytest.mark.parametrize("bias_shape, bias_first", [((6,), False), ((1, 6), True), ((), False)])
def test_matmul_plus_bias_becomes_gemm(bias_shape: tuple, bias_first: bool) -> None:
    add_inputs = ["bias", "mm"] if bias_first else ["mm", "bias"]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", add_inputs, ["y"])]
    inits = [init("w", rand(8, 6, seed=1)), init("bias", rand(*bias_shape, seed=2))]
    proto = model(nodes, [info("x", ["batch", 8])], [info("y", ["batch", 6])], inits)
    out = check(PASS, proto, {"x": rand(3, 8)}, {"x": rand(1, 8)})
    assert ops(out) == {"Gemm": 1}
    assert out.graph.node[0].output == ["y"]


def test_matmul_add_in_an_if_body() -> None:
    then = branch(
        "then",
        [
            helper.make_node("MatMul", ["x", "w"], ["tm"]),
            helper.make_node("Add", ["tm", "bias"], ["ta"]),
            helper.make_node("Relu", ["ta"], ["t_out"]),
        ],
        [info("t_out", [2, 6])],
        [init("bias", rand(6, seed=3))],
    )
    orelse = branch("else", [helper.make_node("MatMul", ["x", "w"], ["e_out"])], [info("e_out", [2, 6])])
    proto = model(
        [if_node("y", then, orelse)],
        [info("x", [2, 8]), info("cond", [], TensorProto.BOOL)],
        [info("y", [2, 6])],
        [init("w", rand(8, 6, seed=4))],
    )
    x = rand(2, 8)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(branches(out)["then_branch"]) == {"Gemm": 1, "Relu": 1}
    assert ops(branches(out)["else_branch"]) == {"MatMul": 1}


@pytest.mark.parametrize(
    "x_shape, bias_shape, y_shape",
    [([2, 3, 8], (6,), [2, 3, 6]), ([3, 8], (1, 1, 6), [1, 3, 6]), ([1, 8], (4, 6), [4, 6])],
    ids=["3d-input", "3d-bias", "widening-bias"],
)
def test_shapes_gemm_cannot_take_stay(x_shape: list, bias_shape: tuple, y_shape: list) -> None:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "bias"], ["y"])]
    inits = [init("w", rand(8, 6, seed=1)), init("bias", rand(*bias_shape, seed=2))]
    proto = model(nodes, [info("x", x_shape)], [info("y", y_shape)], inits)
    out = check(PASS, proto, {"x": rand(*x_shape)})
    assert ops(out) == ops(proto)


def test_runtime_weights_or_shared_matmul_stay() -> None:
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "bias"], ["y"])]
    proto = model(nodes, [info("x", [2, 8]), info("w", [8, 6])], [info("y", [2, 6])], [init("bias", rand(6))])
    assert ops(apply(PASS, proto)) == ops(proto)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["a"]),
        helper.make_node("Mul", ["a", "mm"], ["y"]),
    ]
    proto = model(nodes, [info("x", [2, 8])], [info("y", [2, 6])], [init("w", rand(8, 6)), init("bias", rand(6))])
    out = check(PASS, proto, {"x": rand(2, 8)})
    assert ops(out) == ops(proto)
