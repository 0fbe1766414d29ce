"""cse: repeated subexpressions merge, within a graph and across subgraph scopes."""

import numpy as np
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import apply, branch, branches, check, if_node, info, init, model, ops, rand

PASS = "cse"


def test_repeated_subexpressions_are_computed_once() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r1"]),
        helper.make_node("Relu", ["x"], ["r2"]),
        helper.make_node("Add", ["r1", "c"], ["a1"]),
        helper.make_node("Add", ["c", "r2"], ["a2"]),
        helper.make_node("Transpose", ["a1"], ["t1"], perm=[1, 0]),
        helper.make_node("Transpose", ["a2"], ["t2"], perm=[1, 0]),
        helper.make_node("Transpose", ["a2"], ["t3"], perm=[0, 1]),
        helper.make_node("Mul", ["t1", "t2"], ["m"]),
        helper.make_node("Add", ["m", "t3"], ["y"]),
    ]
    proto = model(nodes, [info("x", [3, 3])], [info("y", [3, 3])], [init("c", rand(3, seed=1))])
    out = check(PASS, proto, {"x": rand(3, 3)})
    assert ops(out) == {"Relu": 1, "Add": 2, "Transpose": 2, "Mul": 1}


def test_duplicates_in_if_bodies_and_of_outer_nodes_go() -> None:
    then = branch(
        "then",
        [
            helper.make_node("Sigmoid", ["x"], ["s1"]),
            helper.make_node("Sigmoid", ["x"], ["s2"]),
            helper.make_node("Neg", ["x"], ["n"]),
            helper.make_node("Add", ["s1", "s2"], ["u"]),
            helper.make_node("Add", ["u", "n"], ["t_out"]),
        ],
        [info("t_out", [4])],
    )
    orelse = branch("else", [helper.make_node("Neg", ["x"], ["e_out"])], [info("e_out", [4])])
    nodes = [
        helper.make_node("Neg", ["x"], ["outer_neg"]),
        if_node("z", then, orelse),
        helper.make_node("Add", ["z", "outer_neg"], ["y"]),
    ]
    proto = model(nodes, [info("x", [4]), info("cond", [], TensorProto.BOOL)], [info("y", [4])])
    x = rand(4)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(branches(out)["then_branch"]) == {"Sigmoid": 1, "Add": 2}, "Neg reads the outer Neg"
    assert ops(branches(out)["else_branch"]) == {"Neg": 1}, "a body output must be made inside the body"


def test_a_duplicate_graph_output_renames_the_kept_node() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Relu", ["x"], ["y"]),
        helper.make_node("Neg", ["r"], ["z"]),
    ]
    proto = model(nodes, [info("x", [2])], [info("y", [2]), info("z", [2])])
    out = check(PASS, proto, {"x": rand(2)})
    assert ops(out) == {"Relu": 1, "Neg": 1}


def test_random_ops_control_flow_and_distinct_nodes_stay() -> None:
    then = branch("then", [helper.make_node("Neg", ["x"], ["t_out"])], [info("t_out", [2])])
    orelse = branch("else", [helper.make_node("Abs", ["x"], ["e_out"])], [info("e_out", [2])])
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["n1"]),
        helper.make_node("RandomNormalLike", ["x"], ["n2"]),
        if_node("i1", then, orelse),
        if_node("i2", then, orelse),
        helper.make_node("Sub", ["x", "n1"], ["s1"]),
        helper.make_node("Sub", ["n1", "x"], ["s2"]),
        helper.make_node("Concat", ["n1", "n2", "i1", "i2", "s1", "s2"], ["y"], axis=0),
    ]
    proto = model(nodes, [info("x", [2]), info("cond", [], TensorProto.BOOL)], [info("y", [12])])
    out = apply(PASS, proto)
    assert ops(out.graph) == {"RandomNormalLike": 2, "If": 2, "Sub": 2, "Concat": 1}
    assert ops(out.graph) == ops(proto.graph)


def test_loop_body_reads_the_outer_copy_of_a_loop_invariant_node() -> None:
    body = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["inner_relu"]),
            helper.make_node("Add", ["acc_in", "inner_relu"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [info("i", [], TensorProto.INT64), info("cond_in", [], TensorProto.BOOL), info("acc_in", [3])],
        [info("cond_out", [], TensorProto.BOOL), info("acc_out", [3])],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["outer_relu"]),
        helper.make_node("Loop", ["n", "", "outer_relu"], ["y"], body=body),
    ]
    proto = model(nodes, [info("x", [3]), info("n", [], TensorProto.INT64)], [info("y", [3])])
    out = check(PASS, proto, {"x": rand(3), "n": np.array(4, np.int64)})
    loop_body = out.graph.node[1].attribute[0].g
    assert ops(loop_body) == {"Add": 1, "Identity": 1}
    assert list(loop_body.node[0].input) == ["acc_in", "outer_relu"]
