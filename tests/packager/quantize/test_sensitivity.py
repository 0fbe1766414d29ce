"""Ranking lowered nodes by the error each adds: a node whose weights were spoiled comes first, even when it sits
after other lowered nodes whose error it inherits."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from edgepack.packager.quantize.sensitivity import rank_nodes
from tests.oracle import run_onnxruntime


def chain(noise: dict[str, float]) -> onnx.ModelProto:
    """x -> MatMul a -> MatMul b -> MatMul c -> y, each weight perturbed by its relative `noise`."""
    rng = np.random.default_rng(0)
    nodes, weights, value = [], [], "x"
    for name in "abc":
        weight = rng.standard_normal((16, 16)).astype(np.float32) / 4
        weight = weight * (1 + noise.get(name, 0.0) * rng.standard_normal(weight.shape).astype(np.float32))
        weights.append(numpy_helper.from_array(weight, f"w_{name}"))
        nodes.append(helper.make_node("MatMul", [value, f"w_{name}"], [f"out_{name}"], name=name))
        value = f"out_{name}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, [4, 16])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_the_spoiled_node_ranks_first() -> None:
    feeds = {"x": np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)}
    lowered = chain({"a": 1e-3, "b": 0.3, "c": 1e-3})
    ranking = rank_nodes(chain({}), lowered, ["a", "b", "c"], [feeds], run_onnxruntime)
    assert ranking[0] == "b"
    assert set(ranking) == {"a", "b", "c"}
