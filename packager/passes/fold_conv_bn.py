"""Folds an inference-mode BatchNormalization with constant statistics into the Conv feeding only it."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from ..graphs import iter_graphs
from . import register
from ._conv import conv_params, set_conv_params
from ._rewrite import Names, const_array, is_op, opset, remove_node, replace, sole_producer


def _inference(bn: ir.Node, version: int) -> bool:
    """Whether `bn` normalises with its stored mean and variance, one [C] value per channel."""
    if version < 7 or any(out.name for out in bn.outputs[1:]):
        return False
    if version < 9 and "spatial" in bn.attributes:
        spatial = bn.attributes["spatial"]
        return not spatial.is_ref() and spatial.as_int() == 1
    training = bn.attributes.get("training_mode")
    return training is None or (not training.is_ref() and training.as_int() == 0)


def _fold(bn: ir.Node, version: int, names: Names) -> None:
    conv = sole_producer(bn.inputs[0], bn)
    params = conv_params(conv)
    if conv is None or params is None or len(bn.inputs) != 5 or not _inference(bn, version):
        return
    stats = [const_array(v) for v in bn.inputs[1:]]
    epsilon = bn.attributes.get("epsilon")
    if any(s is None or s.shape != params.bias.shape for s in stats) or (epsilon is not None and epsilon.is_ref()):
        return
    gamma, beta, mean, var = (s.astype(np.float64) for s in stats)
    eps = 1e-5 if epsilon is None else epsilon.as_float()
    scale = gamma / np.sqrt(var + eps)
    params.weights = params.weights * scale.reshape(-1, *[1] * (params.weights.ndim - 1))
    params.bias = (params.bias - mean) * scale + beta
    set_conv_params(conv, params, names)
    replace(bn.outputs[0], conv.outputs[0])
    remove_node(bn)


@register("fold-conv-bn", "Conv followed by inference BatchNormalization becomes one Conv")
def apply(model: ir.Model) -> ir.Model:
    if model.ir_version < 4:  # new initializers would have to be graph inputs too
        return model
    names, version = Names(model), opset(model)
    for graph in list(iter_graphs(model.graph)):
        for node in list(graph):
            if is_op(node, "BatchNormalization"):
                _fold(node, version, names)
    return model
