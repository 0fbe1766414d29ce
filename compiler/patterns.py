"""Graph rewrites the lowering applies before emitting ops, so that more work lands in fused kernels:
x * clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x) (alpha 1/6, beta 1/2) become one HardSwish (which then folds into
the Conv before it); x * Sigmoid(x) becomes one Swish (SiLU: one pass over x instead of two, and one tensor less);
x * 0.5 * (1 + erf(x / sqrt(2))) (exporters' GELU, in any association of its products) becomes one Gelu, and
x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) (its tanh approximation: GPT-2's and jax's) one Gelu with
approximate "tanh"."""

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
                  constants: dict[str, np.ndarray]) -> tuple[str, list[onnx.NodeProto]] | None:
    """x and the node where `erf` reads x / sqrt(2), as Div(x, sqrt(2)) or Mul(x, 1 / sqrt(2)); else None."""
    scaled = producer.get(erf.input[0])
    if scaled is None or len(scaled.input) != 2:
        return None
    if scaled.op_type == "Div" and _is(_scalar(scaled.input[1], constants), math.sqrt(2.0)):
        return scaled.input[0], [scaled]
    if scaled.op_type == "Mul":
        for x_name, factor in (scaled.input[0], scaled.input[1]), (scaled.input[1], scaled.input[0]):
            if _is(_scalar(factor, constants), math.sqrt(0.5)):
                return x_name, [scaled]
    return None


def _monomial(name: str, x_name: str, producer: dict[str, onnx.NodeProto], constants: dict[str, np.ndarray],
              nodes: list[onnx.NodeProto]) -> tuple[float, int] | None:
    """`name` as c * x^n from scalar constants, x, Mul and Pow by a whole constant: (c, n), with the nodes it took
    added to `nodes`; else None."""
    if name == x_name:
        return 1.0, 1
    value = _scalar(name, constants)
    if value is not None:
        return value, 0
    node = producer.get(name)
    if node is None or len(node.input) != 2 or node.op_type not in ("Mul", "Pow"):
        return None
    nodes.append(node)
    base = _monomial(node.input[0], x_name, producer, constants, nodes)
    if node.op_type == "Pow":
        exponent = _scalar(node.input[1], constants)
        if base is None or exponent is None or exponent != round(exponent) or not 0 < exponent <= 4:
            return None
        return base[0] ** exponent, base[1] * int(exponent)
    other = _monomial(node.input[1], x_name, producer, constants, nodes)
    return None if base is None or other is None else (base[0] * other[0], base[1] + other[1])


def _tanh_argument(tanh: onnx.NodeProto, producer: dict[str, onnx.NodeProto],
                   constants: dict[str, np.ndarray]) -> tuple[str, list[onnx.NodeProto]] | None:
    """x and the nodes where `tanh` reads sqrt(2 / pi) * (x + 0.044715 x^3), x^3 by Mul or Pow in any order; else
    None."""
    scaled = producer.get(tanh.input[0])
    if scaled is None or scaled.op_type != "Mul" or len(scaled.input) != 2:
        return None
    for factor, sum_name in (scaled.input[0], scaled.input[1]), (scaled.input[1], scaled.input[0]):
        total = producer.get(sum_name)
        if not _is(_scalar(factor, constants), math.sqrt(2.0 / math.pi)) or total is None or \
                total.op_type != "Add" or len(total.input) != 2:
            continue
        for x_name, cube_name in (total.input[0], total.input[1]), (total.input[1], total.input[0]):
            nodes = [scaled, total]
            cube = _monomial(cube_name, x_name, producer, constants, nodes)
            if cube is not None and cube[1] == 3 and _is(cube[0], 0.044715):
                return x_name, nodes
    return None


GELU_GATES = {"Erf": (_erf_argument, "none"), "Tanh": (_tanh_argument, "tanh")}
"""The gates of GELU's two forms: what finds x in the gate's argument, and the Gelu node's `approximate`."""


def rewrite_gelu(model: onnx.ModelProto, uses: dict[str, int]) -> onnx.ModelProto:
    """A copy of `model` with the top-level x * 0.5 * (1 + erf(x / sqrt(2))) chains (as PyTorch exports GELU), and
    those of its tanh form, as Gelu nodes, whatever the order of the two products; each intermediate read by the
    chain alone; for the lowering only, never saved."""
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
    for gate in graph.node:
        found, approximate = GELU_GATES.get(gate.op_type, (None, ""))
        argument = found(gate, producer, constants) if found else None
        add = sole_reader(gate, "Add") if argument else None
        if add is None or not _is(_scalar(_other_input(add, gate.output[0]) or "", constants), 1.0):
            continue
        x_name, inner = argument
        first = sole_reader(add, "Mul")
        factor = _other_input(first, add.output[0]) if first else None
        chain = [*inner, gate, add, first]
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
        if not ok or any(uses.get(n.output[0]) != 1 or n.output[0] in outputs for n in inner):
            continue
        replaced[id(root)] = onnx.helper.make_node("Gelu", [x_name], [root.output[0]], name=root.name,
                                                   approximate=approximate)
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
