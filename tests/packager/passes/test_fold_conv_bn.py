"""fold-conv-bn: Conv + inference BatchNormalization becomes one Conv."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.packager.passes.slimpass_helpers import apply, branch, branches, check, if_node, info, init, model, ops, rand

PASS = "fold-conv-bn"
C = 4


def bn_inits(prefix: str = "") -> list:
    rng = np.random.default_rng(7)
    return [
        init(prefix + "gamma", rng.uniform(0.5, 1.5, C).astype(np.float32)),
        init(prefix + "beta", rng.standard_normal(C).astype(np.float32)),
        init(prefix + "mean", rng.standard_normal(C).astype(np.float32)),
        init(prefix + "var", rng.uniform(0.5, 2.0, C).astype(np.float32)),
    ]


def bn(x: str, y: str, prefix: str = "", **attrs) -> object:
    inputs = [x, *(prefix + p for p in ("gamma", "beta", "mean", "var"))]
    return helper.make_node("BatchNormalization", inputs, [y], **attrs)


@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_then_batchnorm_becomes_one_conv(with_bias: bool) -> None:
    conv_inputs = ["x", "w", "b"] if with_bias else ["x", "w"]
    nodes = [
        helper.make_node("Conv", conv_inputs, ["c"], pads=[1, 1, 1, 1]),
        bn("c", "y", epsilon=1e-3),
    ]
    inits = [init("w", rand(C, 3, 3, 3, seed=1, scale=0.3)), *bn_inits()]
    if with_bias:
        inits.append(init("b", rand(C, seed=2)))
    proto = model(nodes, [info("x", [1, 3, 8, 8])], [info("y", [1, C, 8, 8])], inits)
    out = check(PASS, proto, {"x": rand(1, 3, 8, 8)})
    assert ops(out) == {"Conv": 1}
    assert out.graph.node[0].output == ["y"]
    assert len(out.graph.initializer) == 2


def test_conv_batchnorm_in_an_if_body_with_outer_weights() -> None:
    then = branch(
        "then",
        [
            helper.make_node("Conv", ["x", "w"], ["tc"], group=2),
            bn("tc", "tb"),
            helper.make_node("Relu", ["tb"], ["t_out"]),
        ],
        [info("t_out", [1, C, 6])],
        bn_inits(),
    )
    orelse = branch("else", [helper.make_node("Conv", ["x", "w"], ["e_out"], group=2)], [info("e_out", [1, C, 6])])
    nodes = [if_node("y", then, orelse)]
    proto = model(
        nodes,
        [info("x", [1, 2, 8]), info("cond", [], TensorProto.BOOL)],
        [info("y", [1, C, 6])],
        [init("w", rand(C, 1, 3, seed=3))],
    )
    x = rand(1, 2, 8)
    out = check(PASS, proto, {"x": x, "cond": np.array(True)}, {"x": x, "cond": np.array(False)})
    assert ops(branches(out)["then_branch"]) == {"Conv": 1, "Relu": 1}
    assert ops(branches(out)["else_branch"]) == {"Conv": 1}
    assert [i.name for i in out.graph.initializer] == ["w"], "the else branch still reads the original weights"


def test_conv_read_twice_stays_unfolded() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        bn("c", "bn_out"),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Add", ["bn_out", "r"], ["y"]),
    ]
    inits = [init("w", rand(C, 3, 1, 1, seed=1)), *bn_inits()]
    proto = model(nodes, [info("x", [1, 3, 4, 4])], [info("y", [1, C, 4, 4])], inits)
    out = check(PASS, proto, {"x": rand(1, 3, 4, 4)})
    assert ops(out) == ops(proto)


def test_weights_fed_at_run_time_or_training_mode_stay_unfolded() -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), bn("c", "y")]
    proto = model(nodes, [info("x", [1, 3, 4, 4]), info("w", [C, 3, 1, 1])], [info("y", [1, C, 4, 4])], bn_inits())
    assert ops(apply(PASS, proto)) == ops(proto)
    training = bn("c", "y", training_mode=1)
    training.output.extend(["running_mean", "running_var"])
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), training]
    inits = [init("w", rand(C, 3, 1, 1)), *bn_inits()]
    outputs = [info("y", [1, C, 4, 4]), info("running_mean", [C]), info("running_var", [C])]
    proto = model(nodes, [info("x", [1, 3, 4, 4])], outputs, inits)
    assert ops(apply(PASS, proto)) == ops(proto)
