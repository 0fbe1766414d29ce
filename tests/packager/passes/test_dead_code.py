"""dead-code: unread nodes, initializers and opsets go; values read inside bodies stay."""

import numpy as np
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import branch, branches, check, if_node, info, init, model, ops, rand

PASS = "dead-code"


def test_unread_nodes_initializers_and_opsets_go() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Add", ["r", "unused_w"], ["dead1"]),
        helper.make_node("Neg", ["dead1"], ["dead2"]),
        helper.make_node("Mul", ["r", "w"], ["y"]),
    ]
    inits = [init("w", rand(3, seed=1)), init("unused_w", rand(3, seed=2)), init("never_read", rand(5))]
    proto = model(
        nodes, [info("x", [3]), info("spare", [1])], [info("y", [3])], inits, extra_opsets=[("com.example", 1)]
    )
    out = check(PASS, proto, {"x": rand(3), "spare": rand(1)})
    assert ops(out) == {"Relu": 1, "Mul": 1}
    assert [i.name for i in out.graph.initializer] == ["w"]
    assert [o.domain for o in out.opset_import] == [""]
    assert [i.name for i in out.graph.input] == ["x", "spare"]


def test_dead_nodes_in_if_bodies_and_what_only_they_read_go() -> None:
    then = branch(
        "then",
        [
            helper.make_node("Mul", ["x", "only_dead_reads_me"], ["t_dead"]),
            helper.make_node("Abs", ["t_dead"], ["t_dead2"]),
            helper.make_node("Add", ["x", "read_in_body"], ["t_out"]),
        ],
        [info("t_out", [2])],
        [init("body_unused", rand(2))],
    )
    orelse = branch("else", [helper.make_node("Neg", ["x"], ["e_out"])], [info("e_out", [2])])
    dead_then = branch("dead_then", [helper.make_node("Sin", ["fed_dead_if"], ["dt"])], [info("dt", [2])])
    dead_else = branch("dead_else", [helper.make_node("Cos", ["fed_dead_if"], ["de"])], [info("de", [2])])
    nodes = [
        helper.make_node("Tanh", ["x"], ["only_dead_reads_me"]),
        helper.make_node("Sigmoid", ["x"], ["read_in_body"]),
        helper.make_node("Exp", ["x"], ["fed_dead_if"]),
        if_node("unread", dead_then, dead_else),
        if_node("y", then, orelse),
    ]
    proto = model(nodes, [info("x", [2]), info("cond", [], TensorProto.BOOL)], [info("y", [2])])
    x = rand(2)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(out.graph) == {"Sigmoid": 1, "If": 1}, "outer nodes read only by dead nodes go too"
    assert ops(branches(out)["then_branch"]) == {"Add": 1}
    assert not branches(out)["then_branch"].initializer


def test_values_read_only_inside_a_body_stay() -> None:
    then = branch("then", [helper.make_node("Add", ["x", "outer"], ["t_out"])], [info("t_out", [2])])
    orelse = branch("else", [helper.make_node("Mul", ["x", "w"], ["e_out"])], [info("e_out", [2])])
    nodes = [helper.make_node("Relu", ["x"], ["outer"]), if_node("y", then, orelse)]
    proto = model(nodes, [info("x", [2]), info("cond", [], TensorProto.BOOL)], [info("y", [2])], [init("w", rand(2))])
    x = rand(2)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(out) == ops(proto)
    assert [i.name for i in out.graph.initializer] == ["w"]
