"""dedupe-initializers: equal initializers share one copy, subgraph copies read the outer one."""

import numpy as np
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import branch, branches, check, if_node, info, init, model, rand

PASS = "dedupe-initializers"


def test_equal_initializers_share_one_copy() -> None:
    w = rand(2, 2, seed=3)
    nodes = [
        helper.make_node("Add", ["x", "w1"], ["a"]),
        helper.make_node("Mul", ["a", "w2"], ["b"]),
        helper.make_node("Reshape", ["b", "shape1"], ["c"]),
        helper.make_node("Sub", ["c", "w3"], ["d"]),
        helper.make_node("Reshape", ["d", "shape2"], ["y"]),
    ]
    inits = [
        init("w1", w),
        init("w2", w.copy()),
        init("w3", w.reshape(4).copy()),  # same bytes, other shape
        init("shape1", np.array([4], np.int64)),
        init("shape2", np.array([4], np.int64)),
    ]
    proto = model(nodes, [info("x", [2, 2])], [info("y", [4])], inits)
    out = check(PASS, proto, {"x": rand(2, 2)})
    assert sorted(i.name for i in out.graph.initializer) == ["shape1", "w1", "w3"]
    assert list(out.graph.node[1].input) == ["a", "w1"]


def test_other_dtype_with_the_same_bytes_stays() -> None:
    nodes = [helper.make_node("Add", ["x", "f"], ["a"]), helper.make_node("Add", ["n", "i"], ["b"])]
    inits = [init("f", np.zeros(2, np.float32)), init("i", np.zeros(2, np.int32))]
    proto = model(
        nodes,
        [info("x", [2]), info("n", [2], TensorProto.INT32)],
        [info("a", [2]), info("b", [2], TensorProto.INT32)],
        inits,
    )
    out = check(PASS, proto, {"x": rand(2), "n": np.arange(2, dtype=np.int32)})
    assert len(out.graph.initializer) == 2


def test_if_body_copies_read_the_outer_initializer_and_each_other() -> None:
    k = rand(3, seed=4)
    then = branch(
        "then",
        [helper.make_node("Add", ["x", "k_then"], ["t1"]), helper.make_node("Mul", ["t1", "k_then2"], ["t_out"])],
        [info("t_out", [3])],
        [init("k_then", k.copy()), init("k_then2", rand(3, seed=5))],
    )
    orelse = branch(
        "else",
        [helper.make_node("Mul", ["x", "m1"], ["e1"]), helper.make_node("Sub", ["e1", "m2"], ["e_out"])],
        [info("e_out", [3])],
        [init("m1", rand(3, seed=6)), init("m2", rand(3, seed=6))],
    )
    nodes = [
        helper.make_node("Add", ["x", "k"], ["a"]),
        if_node("b", then, orelse),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    proto = model(nodes, [info("x", [3]), info("cond", [], TensorProto.BOOL)], [info("y", [3])], [init("k", k)])
    x = rand(3)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    bodies = branches(out)
    assert [i.name for i in bodies["then_branch"].initializer] == ["k_then2"]
    assert list(bodies["then_branch"].node[0].input) == ["x", "k"]
    assert [i.name for i in bodies["else_branch"].initializer] == ["m1"]


def test_initializers_that_are_graph_inputs_stay() -> None:
    nodes = [helper.make_node("Add", ["x", "w1"], ["a"]), helper.make_node("Add", ["a", "w2"], ["y"])]
    inits = [init("w1", np.ones(2, np.float32)), init("w2", np.ones(2, np.float32))]
    proto = model(nodes, [info("x", [2]), info("w1", [2])], [info("y", [2])], inits)
    out = check(PASS, proto, {"x": rand(2)}, {"x": rand(2), "w1": rand(2, seed=9)})
    assert len(out.graph.initializer) == 2
