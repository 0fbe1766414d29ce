"""Graph rewrites the lowering applies before emitting ops, so that more work lands in fused kernels:
x * clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x) (alpha 1/6, beta 1/2) become one HardSwish (which then folds into
the Conv before it); x * Sigmoid(x) becomes one Swish (SiLU: one pass over x instead of two, and one tensor less);
x * 0.5 * (1 + erf(x / sqrt(2))) (exporters' GELU, in any association of its products) becomes one Gelu."""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import numpy_helper


def _scalar(name: str, constants: dict[str, np.ndarray]) -> float | None:
    value = constants.get(name)
    return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    found = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            found[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return found


def _clip_bounds(node: onnx.NodeProto, constants: dict[str, np.ndarray]) -> tuple[float | None, float | None]:
    if len(node.input) >= 3:
        return _scalar(node.input[1], constants), _scalar(node.input[2], constants)
    bounds = {a.name: a.f for a in node.attribute}
    return bounds.get("min"), bounds.get("max")


def _is_hard_swish_gate(node: onnx.NodeProto | None, x_name: str) -> bool:
    """Whether `node` is HardSigmoid(x) with alpha 1/6 and beta 1/2: clip(x / 6 + 1/2, 0, 1), HardSwish's gate."""
    if node is None or node.op_type != "HardSigmoid" or node.input[0] != x_name:
        return False
    values = {a.name: a.f for a in node.attribute}
    return abs(values.get("alpha", 0.2) - 1.0 / 6.0) <= 1e-7 and values.get("beta", 0.5) == 0.5


def rewrite_hard_swish(model: onnx.ModelProto, uses: dict[str, int]) -> onnx.ModelProto:
    """A copy of `model` with the top-level x * clip(x + 3, 0, 6) / 6 chains and x * HardSigmoid(x) products (PaddleOCR
    v5's export of HardSwish) as HardSwish nodes. The copy is for the lowering only (HardSwish may be newer than the
    model's opset): it is never saved."""
    graph = model.graph
    constants = _constants(graph)
    producer = {out: node for node in graph.node for out in node.output}
    outputs = {o.name for o in graph.output}
    replaced: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for div in graph.node:
        if div.op_type != "Div" or _scalar(div.input[1], constants) != 6.0:
            continue
        mul = producer.get(div.input[0])
        if mul is None or mul.op_type != "Mul" or uses.get(mul.output[0]) != 1 or mul.output[0] in outputs:
            continue
        for x_name, clip_name in (mul.input[0], mul.input[1]), (mul.input[1], mul.input[0]):
            clip = producer.get(clip_name)
            if clip is None or clip.op_type != "Clip" or _clip_bounds(clip, constants) != (0.0, 6.0):
                continue
            add = producer.get(clip.input[0])
            if add is None or add.op_type != "Add" or uses.get(clip.output[0]) != 1 or uses.get(add.output[0]) != 1:
                continue
            if sorted([_scalar(n, constants) is not None and _scalar(n, constants) == 3.0 for n in add.input]) != \
                    [False, True] or x_name not in add.input:
                continue
            replaced[id(div)] = onnx.helper.make_node("HardSwish", [x_name], [div.output[0]], name=div.name)
            dropped |= {id(mul), id(clip), id(add)}
            break
    for mul in graph.node:
        if mul.op_type != "Mul" or id(mul) in dropped:
            continue
        for x_name, gate_name in (mul.input[0], mul.input[1]), (mul.input[1], mul.input[0]):
            gate = producer.get(gate_name)
            if _is_hard_swish_gate(gate, x_name) and uses.get(gate_name) == 1 and gate_name not in outputs:
                replaced[id(mul)] = onnx.helper.make_node("HardSwish", [x_name], [mul.output[0]], name=mul.name)
                dropped.add(id(gate))
                break
    return _with_replacements(model, replaced, dropped)


def rewrite_swish(model: onnx.ModelProto, uses: dict[str, int]) -> onnx.ModelProto:
    """A copy of `model` with the top-level products x * Sigmoid(x) (YOLO's SiLU), whose Sigmoid nothing else reads,
    as Swish nodes (x * Sigmoid(x), ONNX's Swish with alpha 1); for the lowering only, never saved."""
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    outputs = {o.name for o in graph.output}
    replaced: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for mul in graph.node:
        if mul.op_type != "Mul" or len(mul.input) != 2:
            continue
        for x_name, gate_name in (mul.input[0], mul.input[1]), (mul.input[1], mul.input[0]):
            gate = producer.get(gate_name)
            if gate is None or gate.op_type != "Sigmoid" or gate.input[0] != x_name or uses.get(gate_name) != 1 or \
                    gate_name in outputs:
                continue
            replaced[id(mul)] = onnx.helper.make_node("Swish", [x_name], [mul.output[0]], name=mul.name)
            dropped.add(id(gate))
            break
    return _with_replacements(model, replaced, dropped)


def _is(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= 1e-6 * abs(target)


def _other_input(node: onnx.NodeProto, name: str) -> str | None:
    """The input of a two-input `node` that is not `name`, or None when `node` does not read `name`."""
    if len(node.input) != 2 or name not in node.input:
        return None
    return node.input[1] if node.input[0] == name else node.input[0]


def _erf_argument(erf: onnx.NodeProto, producer: dict[str, onnx.NodeProto],
                  constants: dict[str, np.ndarray]) -> tuple[str, onnx.NodeProto] | None:
    """x and the node where `erf` reads x / sqrt(2), as Div(x, sqrt(2)) or Mul(x, 1 / sqrt(2)); else None."""
    scaled = producer.get(erf.input[0])
    if scaled is None or len(scaled.input) != 2:
        return None
    if scaled.op_type == "Div" and _is(_scalar(scaled.input[1], constants), math.sqrt(2.0)):
        return scaled.input[0], scaled
    if scaled.op_type == "Mul":
        for x_name, factor in (scaled.input[0], scaled.input[1]), (scaled.input[1], scaled.input[0]):
            if _is(_scalar(factor, constants), math.sqrt(0.5)):
                return x_name, scaled
    return None


def rewrite_gelu(model: onnx.ModelProto, uses: dict[str, int]) -> onnx.ModelProto:
    """A copy of `model` with the top-level x * 0.5 * (1 + erf(x / sqrt(2))) chains (as PyTorch exports GELU) as Gelu
    nodes, whatever the order of the two products; each intermediate read by the chain alone; for the lowering
    only, never saved."""
    graph = model.graph
    constants = _constants(graph)
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}

    def sole_reader(node: onnx.NodeProto, op_type: str) -> onnx.NodeProto | None:
        out = node.output[0]
        found = readers.get(out, [])
        if uses.get(out) != 1 or out in outputs or len(found) != 1 or found[0].op_type != op_type:
            return None
        return found[0]

    replaced: dict[int, onnx.NodeProto] = {}
    dropped: set[int] = set()
    for erf in graph.node:
        argument = _erf_argument(erf, producer, constants) if erf.op_type == "Erf" else None
        add = sole_reader(erf, "Add") if argument else None
        if add is None or not _is(_scalar(_other_input(add, erf.output[0]) or "", constants), 1.0):
            continue
        x_name, scaled = argument
        first = sole_reader(add, "Mul")
        factor = _other_input(first, add.output[0]) if first else None
        chain = [scaled, erf, add, first]
        if factor == x_name:  # (x * (1 + erf)) * 0.5
            root = sole_reader(first, "Mul")
            ok = root is not None and _is(_scalar(_other_input(root, first.output[0]) or "", constants), 0.5)
        elif _is(_scalar(factor or "", constants), 0.5):  # x * ((1 + erf) * 0.5)
            root = sole_reader(first, "Mul")
            ok = root is not None and _other_input(root, first.output[0]) == x_name
        else:  # (x * 0.5) * (1 + erf)
            half = producer.get(factor or "")
            root = first
            ok = half is not None and half.op_type == "Mul" and sole_reader(half, "Mul") is first and \
                _is(_scalar(_other_input(half, x_name) or "", constants), 0.5)
            chain[-1] = half
        if not ok or uses.get(scaled.output[0]) != 1 or scaled.output[0] in outputs:
            continue
        replaced[id(root)] = onnx.helper.make_node("Gelu", [x_name], [root.output[0]], name=root.name)
        dropped |= {id(n) for n in chain if n is not root}
    return _with_replacements(model, replaced, dropped)


def _with_replacements(model: onnx.ModelProto, replaced: dict[int, onnx.NodeProto],
                       dropped: set[int]) -> onnx.ModelProto:
    """`model` itself when nothing is replaced, else a copy whose nodes are replaced (by id) or dropped."""
    graph = model.graph
    if not replaced:
        return model
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    del rewritten.graph.node[:]
    rewritten.graph.node.extend(replaced.get(id(n), n) for n in graph.node if id(n) not in dropped)
    return rewritten
