"""Tiny ONNX models and the checks every slim pass test makes: checker, names, onnxruntime outputs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import onnx
import onnx_ir as ir
from onnx import TensorProto, helper, numpy_helper

from edgepack.packager.passes import PASSES
from edgepack.runtime.graph_protos import iter_graph_protos
from tests.oracle import run_onnxruntime

FLOAT = TensorProto.FLOAT


def info(name: str, shape: Sequence[int | str] | None, dtype: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    initializers: Sequence[onnx.TensorProto] = (),
    opset: int = 17,
    extra_opsets: Sequence[tuple[str, int]] = (),
) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "main", list(inputs), list(outputs), list(initializers))
    imports = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, v) for d, v in extra_opsets)]
    proto = helper.make_model(graph, opset_imports=imports, ir_version=8)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def branch(
    name: str,
    nodes: Sequence[onnx.NodeProto],
    outputs: Sequence[onnx.ValueInfoProto],
    initializers: Sequence[onnx.TensorProto] = (),
) -> onnx.GraphProto:
    return helper.make_graph(list(nodes), name, [], list(outputs), list(initializers))


def if_node(output: str, then: onnx.GraphProto, orelse: onnx.GraphProto, cond: str = "cond") -> onnx.NodeProto:
    return helper.make_node("If", [cond], [output], then_branch=then, else_branch=orelse)


def assert_same_outputs(before: onnx.ModelProto, after: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """onnxruntime (optimizations off) gives `after` the outputs of `before`, within 1e-5."""
    expected, actual = run_onnxruntime(before, feeds), run_onnxruntime(after, feeds)
    assert list(actual) == list(expected)
    for name, want in expected.items():
        assert actual[name].shape == want.shape and actual[name].dtype == want.dtype, name
        np.testing.assert_allclose(actual[name], want, rtol=0, atol=1e-5, err_msg=name)


def apply(name: str, proto: onnx.ModelProto) -> onnx.ModelProto:
    """Run slim pass `name` on a copy of `proto`; the result must pass the full checker with the same signature."""
    out = ir.to_proto(PASSES[name].apply(ir.from_proto(proto)))
    onnx.checker.check_model(out, full_check=True)
    assert [i.name for i in out.graph.input] == [i.name for i in proto.graph.input]
    assert [o.name for o in out.graph.output] == [o.name for o in proto.graph.output]
    return out


def check(name: str, proto: onnx.ModelProto, *feeds: dict[str, np.ndarray]) -> onnx.ModelProto:
    """Apply pass `name` and assert onnxruntime gives the same outputs for every feed."""
    out = apply(name, proto)
    for feed in feeds:
        assert_same_outputs(proto, out, feed)
    return out


def ops(proto: onnx.ModelProto | onnx.GraphProto) -> Counter[str]:
    """Op types over a model's graphs (subgraphs included), or over one graph only."""
    if isinstance(proto, onnx.GraphProto):
        return Counter(n.op_type for n in proto.node)
    return Counter(n.op_type for g in iter_graph_protos(proto.graph) for n in g.node)


def branches(proto: onnx.ModelProto) -> dict[str, onnx.GraphProto]:
    """The If branches of the main graph by attribute name (then_branch / else_branch)."""
    return {a.name: a.g for n in proto.graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH}


def rand(*shape: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
