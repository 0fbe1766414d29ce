"""Folds a per-output-channel constant Mul/Div into a Conv's weights and bias, and Add/Sub into its bias."""

from __future__ import annotations

import onnx_ir as ir

from ..graphs import iter_graphs
from . import register
from ._conv import conv_params, per_channel, set_conv_params
from ._rewrite import Names, const_array, is_op, remove_node, replace, sole_producer

_COMMUTATIVE = {"Mul", "Add"}


def _fold(node: ir.Node, names: Names) -> None:
    if len(node.inputs) != 2:
        return
    sides = [(0, 1), (1, 0)] if node.op_type in _COMMUTATIVE else [(0, 1)]
    for conv_index, const_index in sides:
        conv = sole_producer(node.inputs[conv_index], node)
        params = conv_params(conv)
        const = const_array(node.inputs[const_index])
        if conv is None or params is None or const is None:
            continue
        rank = params.weights.ndim
        factor = per_channel(const, params.weights.shape[0], rank) if const.dtype == params.dtype else None
        if factor is None or (node.op_type == "Div" and not factor.all()):
            return
        shaped = factor.reshape(-1, *[1] * (rank - 1))
        if node.op_type == "Mul":
            params.weights, params.bias = params.weights * shaped, params.bias * factor
        elif node.op_type == "Div":
            params.weights, params.bias = params.weights / shaped, params.bias / factor
        elif node.op_type == "Add":
            params.bias = params.bias + factor
        else:
            params.bias = params.bias - factor
        set_conv_params(conv, params, names)
        replace(node.outputs[0], conv.outputs[0])
        remove_node(node)
        return


@register("fold-conv-mul-add", "Conv followed by a per-channel constant Mul/Div/Add/Sub becomes one Conv")
def apply(model: ir.Model) -> ir.Model:
    if model.ir_version < 4:  # new initializers would have to be graph inputs too
        return model
    names = Names(model)
    for graph in list(iter_graphs(model.graph)):
        for node in list(graph):
            if is_op(node, "Mul", "Div", "Add", "Sub"):
                _fold(node, names)
    return model
