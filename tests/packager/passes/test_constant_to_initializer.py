"""constant-to-initializer: Constant nodes become initializers, in If and Loop bodies too."""

import numpy as np
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import branch, branches, check, if_node, info, model, ops, rand

PASS = "constant-to-initializer"


def test_constants_of_every_kind_become_initializers() -> None:
    nodes = [
        helper.make_node("Constant", [], ["c"], value=helper.make_tensor("t", TensorProto.FLOAT, [3], [1, 2, 3])),
        helper.make_node("Constant", [], ["f"], value_float=0.5),
        helper.make_node("Constant", [], ["fs"], value_floats=[1.0, -1.0, 2.0]),
        helper.make_node("Constant", [], ["shape"], value_ints=[3, 1]),
        helper.make_node("Constant", [], ["axis"], value_int=0),
        helper.make_node("Add", ["x", "c"], ["a"]),
        helper.make_node("Mul", ["a", "f"], ["b"]),
        helper.make_node("Sub", ["b", "fs"], ["d"]),
        helper.make_node("Reshape", ["d", "shape"], ["e"]),
        helper.make_node("Unsqueeze", ["e", "axis"], ["y"]),
    ]
    proto = model(nodes, [info("x", [3])], [info("y", [1, 3, 1])])
    out = check(PASS, proto, {"x": rand(3)})
    assert ops(out) == {"Add": 1, "Mul": 1, "Sub": 1, "Reshape": 1, "Unsqueeze": 1}
    assert {i.name for i in out.graph.initializer} == {"c", "f", "fs", "shape", "axis"}


def test_constants_in_if_bodies_become_subgraph_initializers() -> None:
    then = branch(
        "then",
        [
            helper.make_node("Constant", [], ["k"], value=helper.make_tensor("t", TensorProto.FLOAT, [2], [1, 2])),
            helper.make_node("Add", ["x", "k"], ["t_out"]),
        ],
        [info("t_out", [2])],
    )
    orelse = branch(
        "else",
        [helper.make_node("Constant", [], ["m"], value_float=3.0), helper.make_node("Mul", ["x", "m"], ["e_out"])],
        [info("e_out", [2])],
    )
    proto = model([if_node("y", then, orelse)], [info("x", [2]), info("cond", [], TensorProto.BOOL)], [info("y", [2])])
    x = rand(2)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(out)["Constant"] == 0
    assert [i.name for i in branches(out)["then_branch"].initializer] == ["k"]
    assert [i.name for i in branches(out)["else_branch"].initializer] == ["m"]


def test_constant_that_is_a_graph_output_stays() -> None:
    then = branch("then", [helper.make_node("Constant", [], ["t_out"], value_floats=[1.0, 2.0])], [info("t_out", [2])])
    orelse = branch("else", [helper.make_node("Neg", ["x"], ["e_out"])], [info("e_out", [2])])
    nodes = [helper.make_node("Constant", [], ["z"], value_ints=[7]), if_node("y", then, orelse)]
    proto = model(
        nodes,
        [info("x", [2]), info("cond", [], TensorProto.BOOL)],
        [info("y", [2]), info("z", [1], TensorProto.INT64)],
    )
    out = check(PASS, proto, {"x": rand(2), "cond": np.array(True)})
    assert ops(out)["Constant"] == 2


def test_constants_in_a_loop_body_become_its_initializers() -> None:
    body = helper.make_graph(
        [
            helper.make_node("Constant", [], ["step"], value_floats=[0.5, 1.5]),
            helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [info("i", [], TensorProto.INT64), info("cond_in", [], TensorProto.BOOL), info("acc_in", [2])],
        [info("cond_out", [], TensorProto.BOOL), info("acc_out", [2])],
    )
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)]
    proto = model(nodes, [info("x", [2]), info("n", [], TensorProto.INT64)], [info("y", [2])])
    out = check(PASS, proto, {"x": rand(2), "n": np.array(3, np.int64)})
    assert ops(out)["Constant"] == 0
    assert [i.name for i in out.graph.node[0].attribute[0].g.initializer] == ["step"]
