"""Emitters of ops the core runs as a few plan ops: LpNormalization (a Reduce, a Div and a Where for zero norms),
Hardmax (ArgExtreme, then OneHot over the same axis), Einsum (Reduce, Transpose and batched MatMul),
InstanceNormalization (LayerNorm and ChannelAffine) and LRN (elementwise ops around a Conv of ones)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import F32, REDUCE

from ..values import Runtime, attributes
from . import EMITTERS, constant, dtype_of, emitter, shape_of, unsupported
from .tensor_ops import binary

if TYPE_CHECKING:
    from ..lower import Lowering


@emitter("LpNormalization")
def emit_lp_normalization(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """x / ||x||_p along the axis, and 0 where the norm is 0 (as ONNX's reference gives)."""
    x = inputs[0]
    attrs = attributes(node)
    p = attrs.get("p", 2)
    if dtype_of(x) != "float32" or p not in (1, 2):
        raise unsupported(node, "float32 with p 1 or 2 only")
    shape = shape_of(x)
    axis = attrs.get("axis", -1) % len(shape)
    norm = lw.arena(f"{node.output[0]}/norm", "float32", [1 if d == axis else n for d, n in enumerate(shape)])
    lw.emit("Reduce", [x], [norm], [REDUCE[f"ReduceL{p}"], *(int(d == axis) for d in range(len(shape)))])
    zero = np.zeros((), np.float32)
    is_zero = binary(lw, "Equal", norm, zero, f"{node.output[0]}/zero_norm")
    scaled = binary(lw, "Div", x, norm, f"{node.output[0]}/scaled")
    out = lw.arena(node.output[0], "float32", shape)
    lw.emit("Where", [is_zero, zero, scaled], [out])
    return [out]


@emitter("Hardmax")
def emit_hardmax(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """1 at the first maximum along the axis, 0 elsewhere; before opset 13 over the input seen as 2-D."""
    x = inputs[0]
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    shape = shape_of(x)
    axis = attributes(node).get("axis", -1 if lw.opset >= 13 else 1) % len(shape)
    source = x
    if lw.opset < 13:
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        source = lw.alias(f"{node.output[0]}/2d", x, (rows, int(np.prod(shape[axis:], dtype=np.int64))))
        axis = 1
    seen = shape_of(source)
    index = lw.arena(f"{node.output[0]}/argmax", "int64", [n for d, n in enumerate(seen) if d != axis])
    lw.emit("ArgExtreme", [source], [index], [axis, 1, 0])
    hard = lw.arena(node.output[0] if source is x else f"{node.output[0]}/onehot", "float32", seen)
    lw.emit("OneHot", [index, np.array([0.0, 1.0], np.float32)], [hard], [axis, seen[axis]])
    return [hard if source is x else lw.alias(node.output[0], hard, shape)]


@emitter("Einsum")
def emit_einsum(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Einsum as Reduce, Transpose and batched MatMul plan ops: labels no other operand and not the output has are
    summed first, then operands are multiplied two at a time, left to right, and the result is put in output order.
    Repeated labels within one operand (diagonals) and ellipsis dims that broadcast are not supported."""
    terms, output = einsum_terms(attributes(node)["equation"], [len(shape_of(v)) for v in inputs])
    if any(len(set(term)) != len(term) for term in terms):
        raise unsupported(node, "repeated labels within one operand (a diagonal) are not supported")
    name = node.output[0]
    operands = []
    for k, (value, term) in enumerate(zip(inputs, terms)):
        others = "".join(t for j, t in enumerate(terms) if j != k) + output
        operands.append(summed(lw, value, term, set(others), f"{name}/sum{k}"))
    value, term = operands[0]
    for k, (other, other_term) in enumerate(operands[1:]):
        needed = set(output + "".join(t for _, t in operands[k + 2:]))
        value, term = multiplied(lw, node, (value, term), (other, other_term), needed, f"{name}/product{k}")
    value, term = summed(lw, value, term, set(output), f"{name}/sum")
    value = transposed(lw, value, [term.index(label) for label in output], f"{name}/ordered")
    return [renamed(lw, value, name)]


def einsum_terms(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' labels and the output's, one character per axis: each `...` becomes the digits of the ellipsis
    dims, right-aligned across operands; without `->` the output is the ellipsis then the labels used once, sorted."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    dims = max([rank - len(term.replace("...", "")) for term, rank in zip(terms, ranks) if "..." in term], default=0)
    digits = "".join(str(d) for d in range(dims))
    terms = [term.replace("...", digits[dims - (rank - len(term.replace("...", ""))):]) for term, rank in
             zip(terms, ranks)]
    if not arrow:
        counts = "".join(terms)
        output = digits + "".join(sorted(label for label in set(counts) if counts.count(label) == 1 and
                                         not label.isdigit()))
    return terms, output.replace("...", digits)


def summed(lw: Lowering, value: Any, term: str, kept: set[str], name: str) -> tuple[Any, str]:
    """`value` with the axes whose labels are not in `kept` summed away."""
    flags = [int(label not in kept) for label in term]
    if not any(flags):
        return value, term
    shape = [n for n, flag in zip(shape_of(value), flags) if not flag]
    out = lw.arena(name, dtype_of(value), shape)
    lw.emit("Reduce", [value], [out], [REDUCE["ReduceSum"], *flags])
    return out, "".join(label for label, flag in zip(term, flags) if not flag)


def multiplied(lw: Lowering, node: onnx.NodeProto, left: tuple[Any, str], right: tuple[Any, str], needed: set[str],
               name: str) -> tuple[Any, str]:
    """The product of two operands as a batched MatMul: [batch, left-only, contracted] x [batch, contracted,
    right-only], labels both share and a later operand or the output needs being the batch."""
    (a, ta), (b, tb) = left, right
    sizes = {**dict(zip(tb, shape_of(b))), **dict(zip(ta, shape_of(a)))}
    if any(sizes[label] != n for label, n in zip(tb, shape_of(b))):
        raise unsupported(node, "operand dims that broadcast are not supported")
    batch = [label for label in ta if label in tb and label in needed]
    contracted = [label for label in ta if label in tb and label not in needed]
    only_a = [label for label in ta if label not in tb]
    only_b = [label for label in tb if label not in ta]

    def size(labels: list[str]) -> int:
        return int(np.prod([sizes[label] for label in labels], dtype=np.int64))

    a = transposed(lw, a, [ta.index(label) for label in batch + only_a + contracted], f"{name}/left")
    b = transposed(lw, b, [tb.index(label) for label in batch + contracted + only_b], f"{name}/right")
    a = reshaped(lw, a, (size(batch), size(only_a), size(contracted)), f"{name}/left3d")
    b = reshaped(lw, b, (size(batch), size(contracted), size(only_b)), f"{name}/right3d")
    out = lw.arena(f"{name}/3d", dtype_of(a), (size(batch), size(only_a), size(only_b)))
    lw.emit("MatMul", [a, b], [out], [], lw.gemm_scratch(size(contracted), size(only_b)))
    labels = batch + only_a + only_b
    return reshaped(lw, out, tuple(sizes[label] for label in labels), name), "".join(labels)


def transposed(lw: Lowering, value: Any, perm: list[int], name: str) -> Any:
    if perm == sorted(perm):
        return value
    if not isinstance(value, Runtime):
        return np.transpose(np.asarray(value), perm)
    out = lw.arena(name, value.dtype, [value.shape[p] for p in perm])
    lw.emit("Transpose", [value], [out], perm)
    return out


def reshaped(lw: Lowering, value: Any, shape: tuple[int, ...], name: str) -> Any:
    if tuple(shape_of(value)) == tuple(shape):
        return value
    return lw.alias(name, value, shape) if isinstance(value, Runtime) else np.asarray(value).reshape(shape)


def renamed(lw: Lowering, value: Any, name: str) -> Any:
    """`value` under the node's output name (a Copy that shares its buffer), unless it is a constant."""
    return lw.alias(name, value, value.shape) if isinstance(value, Runtime) else value


@emitter("InstanceNormalization")
def emit_instance_norm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """Each channel of each image normalized over its spatial axes (LayerNorm from axis 2, unscaled), then the
    per-channel scale and bias (ChannelAffine)."""
    x, scale, bias = inputs
    shape = shape_of(x)
    if dtype_of(x) != "float32" or len(shape) < 3:
        raise unsupported(node, "float32 with spatial axes only")
    spatial = int(np.prod(shape[2:], dtype=np.int64))
    normalized = lw.arena(f"{node.output[0]}/normalized", "float32", shape)
    lw.emit("LayerNorm", [x, np.ones(spatial, np.float32)], [normalized],
            [2, F32(attributes(node).get("epsilon", 1e-5))])
    out = lw.arena(node.output[0], "float32", shape)
    lw.emit("ChannelAffine", [normalized, *(constant(node, v, "scale and bias").astype(np.float32)
                                            for v in (scale, bias))], [out])
    return [out]


@emitter("LRN")
def emit_lrn(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """x / (bias + alpha / size * the sum of squares over `size` neighbouring channels) ^ beta: the window sum is a
    Conv of ones over the squares seen as [N, 1, C, spatial]."""
    x = inputs[0]
    shape = shape_of(x)
    if dtype_of(x) != "float32" or len(shape) < 3:
        raise unsupported(node, "float32 with spatial axes only")
    attrs = attributes(node)
    size, name = int(attrs["size"]), node.output[0]
    squares = binary(lw, "Mul", x, x, f"{name}/squares")
    columns = (shape[0], 1, shape[1], int(np.prod(shape[2:], dtype=np.int64)))
    window = onnx.helper.make_node("Conv", [f"{name}/columns", f"{name}/ones"], [f"{name}/window"],
                                   kernel_shape=[size, 1],
                                   pads=[(size - 1) // 2, 0, size - 1 - (size - 1) // 2, 0])
    sums, = EMITTERS["Conv"](lw, window, [lw.alias(f"{name}/columns", squares, columns),
                                          np.ones((1, 1, size, 1), np.float32)])
    scaled = binary(lw, "Mul", lw.alias(f"{name}/sums", sums, shape),
                    np.array(attrs.get("alpha", 1e-4) / size, np.float32), f"{name}/scaled")
    base = binary(lw, "Add", scaled, np.array(attrs.get("bias", 1.0), np.float32), f"{name}/base")
    divisor = binary(lw, "Pow", base, np.array(attrs.get("beta", 0.75), np.float32), f"{name}/divisor")
    return [binary(lw, "Div", x, divisor, name)]


@emitter("PRelu")
def emit_prelu(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """x < 0 ? x * slope : x, the slope broadcast to x: one Binary op."""
    x, slope = inputs
    if dtype_of(x) != "float32":
        raise unsupported(node, "float32 only")
    return [binary(lw, "PRelu", x, slope, node.output[0])]
