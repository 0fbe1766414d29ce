"""Reading and rewriting a Conv's constant weights and bias, for the folding passes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from ._rewrite import FOLDABLE_DTYPES, Names, add_initializer, const_array, drop_unused_initializer, is_op


@dataclass
class ConvParams:
    weights: np.ndarray
    """[C_out, C_in / groups, *kernel] in float64."""
    bias: np.ndarray
    """[C_out] in float64, zeros when the Conv has none."""
    dtype: np.dtype
    """The dtype the Conv's weights are stored in."""


def conv_params(conv: ir.Node | None) -> ConvParams | None:
    """A plain Conv's constant weights and bias, None when either can change at run time."""
    if conv is None or not is_op(conv, "Conv") or len(conv.inputs) < 2:
        return None
    weights = const_array(conv.inputs[1])
    if weights is None or weights.dtype not in FOLDABLE_DTYPES or weights.ndim < 3:
        return None
    bias_value = conv.inputs[2] if len(conv.inputs) > 2 else None
    bias = np.zeros(weights.shape[0]) if bias_value is None else const_array(bias_value)
    if bias is None or bias.shape != (weights.shape[0],):
        return None
    return ConvParams(weights.astype(np.float64), bias.astype(np.float64), weights.dtype)


def set_conv_params(conv: ir.Node, params: ConvParams, names: Names) -> None:
    """Point `conv` at new initializers holding `params` in their original dtype."""
    graph = conv.graph
    old_weights = conv.inputs[1]
    if graph is None or old_weights is None:
        raise ValueError(f"Conv {conv.name!r} has no graph or no weights")
    base = old_weights.name or conv.name or "conv"
    old = [v for v in conv.inputs[1:3] if v is not None]
    if len(conv.inputs) < 3:
        conv.resize_inputs(3)
    weights = add_initializer(graph, names.fresh(f"{base}_folded"), params.weights.astype(params.dtype))
    bias = add_initializer(graph, names.fresh(f"{base}_folded_bias"), params.bias.astype(params.dtype))
    conv.replace_input_with(1, weights)
    conv.replace_input_with(2, bias)
    for value in old:
        drop_unused_initializer(value)


def per_channel(const: np.ndarray, channels: int, rank: int) -> np.ndarray | None:
    """`const` as [channels] float64 when it broadcasts against a [N, channels, ...] tensor per channel only."""
    if const.ndim > rank:
        return None
    shape = (1,) * (rank - const.ndim) + const.shape
    if shape[0] != 1 or shape[1] not in (1, channels) or any(d != 1 for d in shape[2:]):
        return None
    return np.broadcast_to(const.reshape(-1).astype(np.float64), (channels,))
