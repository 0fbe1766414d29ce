"""fold-conv-mul-add: per-channel constant Mul/Div/Add/Sub after a Conv fold into it."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import apply, branch, branches, check, if_node, info, init, model, ops, rand

PASS = "fold-conv-mul-add"
C = 4


def conv_model(tail: list, inits: list, out: str = "y") -> object:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]), *tail]
    weights = [init("w", rand(C, 2, 3, 3, seed=1, scale=0.3)), init("b", rand(C, seed=2))]
    return model(nodes, [info("x", [1, 2, 6, 6])], [info(out, [1, C, 4, 4])], [*weights, *inits])


@pytest.mark.parametrize(
    "tail, const",
    [
        ([helper.make_node("Mul", ["c", "k"], ["m"]), helper.make_node("Add", ["k2", "m"], ["y"])], (C, 1, 1)),
        ([helper.make_node("Mul", ["k", "c"], ["m"]), helper.make_node("Sub", ["m", "k2"], ["y"])], (1, C, 1, 1)),
        ([helper.make_node("Div", ["c", "k"], ["m"]), helper.make_node("Add", ["m", "k2"], ["y"])], ()),
    ],
    ids=["mul-add", "mul-sub", "div-add"],
)
def test_per_channel_constants_fold_into_the_conv(tail: list, const: tuple) -> None:
    rng = np.random.default_rng(5)
    inits = [
        init("k", rng.uniform(0.5, 2, const).astype(np.float32)),
        init("k2", rng.standard_normal(const).astype(np.float32)),
    ]
    proto = conv_model(tail, inits)
    out = check(PASS, proto, {"x": rand(1, 2, 6, 6)})
    assert ops(out) == {"Conv": 1}
    assert out.graph.node[0].output == ["y"]


def test_conv_mul_in_an_if_body() -> None:
    then = branch(
        "then",
        [helper.make_node("Conv", ["x", "w"], ["tc"]), helper.make_node("Mul", ["tc", "k"], ["t_out"])],
        [info("t_out", [1, C, 4])],
        [init("k", rand(C, 1, seed=3))],
    )
    orelse = branch("else", [helper.make_node("Conv", ["x", "w"], ["e_out"])], [info("e_out", [1, C, 4])])
    proto = model(
        [if_node("y", then, orelse)],
        [info("x", [1, 2, 6]), info("cond", [], TensorProto.BOOL)],
        [info("y", [1, C, 4])],
        [init("w", rand(C, 2, 3, seed=4))],
    )
    x = rand(1, 2, 6)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(branches(out)["then_branch"]) == {"Conv": 1}


@pytest.mark.parametrize(
    "tail, inits",
    [
        ([helper.make_node("Mul", ["c", "k"], ["y"])], [init("k", rand(1, 1, 1, 4))]),
        ([helper.make_node("Add", ["c", "k"], ["y"])], [init("k", rand(C))]),
        ([helper.make_node("Sub", ["k", "c"], ["y"])], [init("k", rand(C, 1, 1))]),
        ([helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["c", "r"], ["y"])], []),
    ],
    ids=["spatial-mul", "last-axis-add", "const-minus-conv", "conv-read-twice"],
)
def test_non_per_channel_or_shared_stays(tail: list, inits: list) -> None:
    proto = conv_model(tail, inits)
    out = check(PASS, proto, {"x": rand(1, 2, 6, 6)})
    assert ops(out) == ops(proto)


def test_runtime_factor_stays() -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Mul", ["c", "k"], ["y"])]
    proto = model(
        nodes,
        [info("x", [1, 2, 3, 3]), info("k", [C, 1, 1])],
        [info("y", [1, C, 1, 1])],
        [init("w", rand(C, 2, 3, 3))],
    )
    assert ops(apply(PASS, proto)) == ops(proto)
