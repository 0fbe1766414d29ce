"""MatMul of a 2-D activation by constant 2-D weights, then Add of a constant [N] / [1, N] bias, becomes one Gemm."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..graphs import iter_graphs
from . import register
from ._rewrite import (
    FOLDABLE_DTYPES,
    const_array,
    dims,
    fill_missing_shapes,
    is_op,
    opset,
    remove_node,
    replace,
    sole_producer,
)


def _bias_fits(bias: np.ndarray, rows: int | None, columns: int) -> bool:
    """Whether `bias` broadcasts to [rows, columns] without widening it (Gemm's C is unidirectional)."""
    if bias.ndim > 2 or (bias.ndim >= 1 and bias.shape[-1] not in (1, columns)):
        return False
    return bias.ndim < 2 or bias.shape[0] == 1 or bias.shape[0] == rows


def _fuse(add: ir.Node) -> None:
    if len(add.inputs) != 2:
        return
    for mm_index in (0, 1):
        matmul = sole_producer(add.inputs[mm_index], add)
        if matmul is not None and is_op(matmul, "MatMul"):
            break
    else:
        return
    activation, weights_value = matmul.inputs
    bias_value = add.inputs[1 - mm_index]
    weights, bias, shape = const_array(weights_value), const_array(bias_value), dims(activation)
    if weights is None or bias is None or shape is None or len(shape) != 2 or weights.ndim != 2:
        return
    if weights.dtype not in FOLDABLE_DTYPES or bias.dtype != weights.dtype:
        return
    if not _bias_fits(bias, shape[0], weights.shape[1]):
        return
    graph = add.graph
    out = add.outputs[0]
    gemm = ir.node("Gemm", [activation, weights_value, bias_value], name=add.name or matmul.name)
    gemm.outputs[0].type, gemm.outputs[0].shape = out.type, out.shape
    graph.insert_before(add, gemm)
    replace(out, gemm.outputs[0], rename=True)
    remove_node(add)
    remove_node(matmul)


@register("matmul-add-to-gemm", "MatMul by constant 2-D weights plus a constant bias, on a 2-D input, becomes Gemm")
def apply(model: ir.Model) -> ir.Model:
    if opset(model) < 7:  # Gemm's C broadcasts from opset 7 on
        return model
    fill_missing_shapes(model)
    for graph in list(iter_graphs(model.graph)):
        for node in list(graph):
            if is_op(node, "Add"):
                _fuse(node)
    return model
