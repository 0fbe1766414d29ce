"""noop-elimination: nodes that change nothing go, graph outputs and body outputs stay made."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import (
    apply,
    branch,
    branches,
    check,
    if_node,
    info,
    init,
    model,
    ops,
    rand,
)

PASS = "noop-elimination"
I64 = np.int64


def test_a_chain_of_noops_collapses_into_its_producer() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Identity", ["r"], ["a"]),
        helper.make_node("Dropout", ["a"], ["b"]),
        helper.make_node("Cast", ["b"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Reshape", ["c", "same_shape"], ["d"]),
        helper.make_node("Expand", ["d", "ones"], ["e"]),
        helper.make_node("Flatten", ["e"], ["f"], axis=1),
        helper.make_node("Transpose", ["f"], ["g"], perm=[0, 1]),
        helper.make_node("Squeeze", ["g"], ["h"]),
        helper.make_node("Pad", ["h", "zero_pads"], ["i"]),
        helper.make_node("Slice", ["i", "starts", "ends"], ["j"]),
        helper.make_node("Concat", ["j"], ["k"], axis=0),
        helper.make_node("Add", ["zero", "k"], ["l"]),
        helper.make_node("Sub", ["l", "zero"], ["m"]),
        helper.make_node("Mul", ["m", "one_row"], ["n"]),
        helper.make_node("Div", ["n", "one"], ["y"]),
    ]
    inits = [
        init("same_shape", np.array([0, -1], I64)),
        init("ones", np.array([1], I64)),
        init("zero_pads", np.zeros(4, I64)),
        init("starts", np.array([0, -100], I64)),
        init("ends", np.array([2**63 - 1, 100], I64)),
        init("zero", np.zeros((), np.float32)),
        init("one_row", np.ones((1, 5), np.float32)),
        init("one", np.ones(1, np.float32)),
    ]
    proto = model(nodes, [info("x", [3, 5])], [info("y", [3, 5])], inits)
    out = check(PASS, proto, {"x": rand(3, 5)})
    assert ops(out) == {"Relu": 1}
    assert out.graph.node[0].output == ["y"]
    assert not out.graph.initializer


def test_noops_on_dynamic_dims_go_when_the_constants_prove_it() -> None:
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["a"]),
        helper.make_node("Unsqueeze", ["a", "no_axes"], ["b"]),
        helper.make_node("Slice", ["b", "starts", "ends", "axes"], ["c"]),
        helper.make_node("Neg", ["c"], ["y"]),
    ]
    inits = [
        init("shape", np.array([-1, 0, 4], I64)),
        init("no_axes", np.zeros(0, I64)),
        init("starts", np.array([0], I64)),
        init("ends", np.array([2**31 - 1], I64)),
        init("axes", np.array([-1], I64)),
    ]
    proto = model(nodes, [info("x", ["N", "M", 4])], [info("y", ["N", "M", 4])], inits)
    out = apply(PASS, proto)
    assert ops(out) == {"Neg": 1}


def test_noops_in_if_bodies_and_outer_values_read_by_them() -> None:
    then = branch(
        "then",
        [
            helper.make_node("Relu", ["outer"], ["t1"]),
            helper.make_node("Identity", ["t1"], ["t2"]),
            helper.make_node("Add", ["t2", "zero"], ["t_out"]),
        ],
        [info("t_out", [2, 3])],
    )
    orelse = branch("else", [helper.make_node("Identity", ["outer"], ["e_out"])], [info("e_out", [2, 3])])
    nodes = [
        helper.make_node("Tanh", ["x"], ["th"]),
        helper.make_node("Identity", ["th"], ["outer"]),
        if_node("y", then, orelse),
    ]
    proto = model(
        nodes,
        [info("x", [2, 3]), info("cond", [], TensorProto.BOOL)],
        [info("y", [2, 3])],
        [init("zero", np.zeros(3, np.float32))],
    )
    x = rand(2, 3)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(out.graph) == {"Tanh": 1, "If": 1}
    assert ops(branches(out)["then_branch"]) == {"Relu": 1}
    assert ops(branches(out)["else_branch"]) == {"Identity": 1}, "a body output must be made inside the body"


def test_identity_from_graph_input_to_graph_output_stays() -> None:
    proto = model([helper.make_node("Identity", ["x"], ["y"])], [info("x", [2])], [info("y", [2])])
    assert ops(check(PASS, proto, {"x": rand(2)})) == {"Identity": 1}


F32 = np.float32
CHANGERS = [
    (helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE), [], [3, 4]),
    (helper.make_node("Reshape", ["x", "s"], ["y"]), [init("s", np.array([4, 3], I64))], [4, 3]),
    (helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0]), [], [4, 3]),
    (helper.make_node("Add", ["x", "z"], ["y"]), [init("z", np.zeros((2, 3, 4), F32))], [2, 3, 4]),
    (helper.make_node("Mul", ["x", "two"], ["y"]), [init("two", np.full(4, 2, F32))], [3, 4]),
    (helper.make_node("Sub", ["z", "x"], ["y"]), [init("z", np.zeros(4, F32))], [3, 4]),
    (helper.make_node("Div", ["one", "x"], ["y"]), [init("one", np.ones(4, F32))], [3, 4]),
    (
        helper.make_node("Slice", ["x", "b", "e"], ["y"]),
        [init("b", np.array([1], I64)), init("e", np.array([3], I64))],
        [2, 4],
    ),
    (helper.make_node("Pad", ["x", "p"], ["y"]), [init("p", np.array([0, 1, 0, 0], I64))], [3, 5]),
    (helper.make_node("Squeeze", ["x", "a"], ["y"]), [init("a", np.array([0], I64))], [4]),
]


@pytest.mark.parametrize("node, inits, out_shape", CHANGERS, ids=[c[0].op_type for c in CHANGERS])
def test_nodes_that_change_their_input_stay(node, inits, out_shape) -> None:
    shape = [1, 4] if node.op_type == "Squeeze" else [3, 4]
    dtype = TensorProto.DOUBLE if node.op_type == "Cast" else TensorProto.FLOAT
    proto = model([node], [info("x", shape)], [info("y", out_shape, dtype)], inits)
    out = check(PASS, proto, {"x": rand(*shape) + 2})
    assert ops(out) == {node.op_type: 1}


def test_dropout_goes_in_inference_mode_only() -> None:
    nodes = [
        helper.make_node("Dropout", ["x", "ratio", "off"], ["a"]),
        helper.make_node("Dropout", ["a", "ratio", "on"], ["b"]),
        helper.make_node("Dropout", ["b", "ratio", "flag"], ["y"]),
    ]
    inits = [init("ratio", np.array(0.5, np.float32)), init("off", np.array(False)), init("on", np.array(True))]
    proto = model(nodes, [info("x", [4]), info("flag", [], TensorProto.BOOL)], [info("y", [4])], inits)
    out = apply(PASS, proto)
    assert ops(out) == {"Dropout": 2}
    assert list(out.graph.node[0].input) == ["x", "ratio", "on"]


def test_dropout_with_a_used_mask_stays() -> None:
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"])]
    proto = model(nodes, [info("x", [4])], [info("y", [4]), info("mask", [4], TensorProto.BOOL)])
    assert ops(check(PASS, proto, {"x": rand(4)})) == {"Dropout": 1}
