"""Emitters of the recurrent ops RNN, GRU and LSTM (plan ops LSTM and Recurrent, runtime/native/kernels/recurrent.c)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.native.epk import F32

from ..values import Runtime, attributes
from . import constant, emitter, shape_of, unsupported
from .nn_ops import packed_panels

if TYPE_CHECKING:
    from ..lower import Lowering

ACTIVATION_CODES = {"Sigmoid": 0, "Tanh": 1, "Relu": 2, "Affine": 3, "LeakyRelu": 4, "ThresholdedRelu": 5,
                    "ScaledTanh": 6, "HardSigmoid": 7, "Elu": 8, "Softsign": 9, "Softplus": 10}
TAKES_ALPHA = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"}
TAKES_BETA = {"Affine", "ScaledTanh", "HardSigmoid"}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
CELLS = {"RNN": 0, "GRU": 1, "LSTM": 2}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DIRECTIONS = {"forward": 0, "reverse": 1, "bidirectional": 2}
STEP_BLOCK = 32
"""As recurrent.c: steps whose input products run as one product."""


def scratch_bytes(gates: int, hidden: int, seq: int) -> int:
    """The kernel's scratch (recurrent.c's scratch_bytes): the input products of a block of steps, then a step's
    rows."""
    return ((min(seq, STEP_BLOCK) + 2) * gates * hidden + 2 * hidden) * 4


def activation_names(node: onnx.NodeProto, dirs: int) -> list[str]:
    """The activations of every direction, the defaults where the node names none."""
    names = [a.decode() if isinstance(a, bytes) else a for a in attributes(node).get("activations", [])]
    return names or DEFAULT_ACTIVATIONS[node.op_type] * dirs


def activation_params(node: onnx.NodeProto, dirs: int) -> list[Any]:
    """Code, alpha and beta of each direction's activations, alphas and betas consumed in order by those taking one."""
    attrs = attributes(node)
    names = activation_names(node, dirs)
    alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
    if len(names) != len(DEFAULT_ACTIVATIONS[node.op_type]) * dirs or not set(names) <= set(ACTIVATION_CODES):
        raise unsupported(node, f"activations {names} are not supported")
    if len(alphas) != sum(n in TAKES_ALPHA for n in names) or len(betas) != sum(n in TAKES_BETA for n in names):
        raise unsupported(node, "activation_alpha and _beta must give exactly the values the activations take")
    params: list[Any] = []
    for name in names:
        alpha = alphas.pop(0) if name in TAKES_ALPHA else 0.0
        beta = betas.pop(0) if name in TAKES_BETA else 0.0
        params += [ACTIVATION_CODES[name], F32(alpha), F32(beta)]
    return params


def full_lengths(node: onnx.NodeProto, lengths: Any, seq: int) -> bool:
    """Whether sequence_lens is absent or a constant that keeps every batch row's whole sequence."""
    if lengths is None or isinstance(lengths, Runtime):
        return lengths is None
    return bool(np.all(constant(node, lengths, "sequence_lens") == seq))


def outputs_of(lw: Lowering, node: onnx.NodeProto, shapes: list[tuple[int, ...]]) -> list[Runtime]:
    """Every output of the op, named ones as the node names them and the others as unused arena tensors."""
    names = list(node.output) + [""] * (len(shapes) - len(node.output))
    return [lw.arena(name or f"{node.name or node.output[0]}/unused{k}", "float32", shape)
            for k, (name, shape) in enumerate(zip(names, shapes))]


REORDERED_STEPS = 4
"""Sequences from this long take their weights reordered (recurrent.c): W's input products of a block of steps run
on the matrix-product micro-kernel, which fewer steps would leave mostly idle."""


def reordered_weights(lw: Lowering, w: Any, r: Any, seq: int) -> tuple[Any, Any, list[int]]:
    """W and R as the recurrent kernels take them, and the params word that says how: float32 constants of a sequence
    of REORDERED_STEPS or more go reordered at plan time (W in the micro-kernel's panels per direction, R transposed,
    each made once per weight), anything else (quantized or run-time weights) as it is."""
    if not lw.packed_weights or seq < REORDERED_STEPS or not all(
            isinstance(v, np.ndarray) and v.dtype == np.float32 for v in (w, r)):
        return w, r, []
    panels = lw.reshaped_weight(w, "recurrent panels", lambda v: np.stack([packed_panels(np.ascontiguousarray(d.T))
                                                                          for d in v]))
    transposed = lw.reshaped_weight(r, "transposed per direction", lambda v: np.ascontiguousarray(v.transpose(0, 2, 1)))
    return panels, transposed, [1]


def emit_plain_lstm(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    """The LSTM plan op: default activations, layout 0, no clip, peepholes, input_forget or short sequences."""
    attrs = attributes(node)
    x = inputs[0]
    seq, batch, _ = shape_of(x)
    hidden = attrs.get("hidden_size", shape_of(inputs[2])[2])
    direction = DIRECTIONS[attrs.get("direction", "forward")]
    dirs = 2 if direction == 2 else 1
    shapes = [(seq, dirs, batch, hidden), (dirs, batch, hidden), (dirs, batch, hidden)]
    outs = outputs_of(lw, node, shapes)
    w, r, reordered = reordered_weights(lw, inputs[1], inputs[2], seq)
    lw.emit("LSTM", [x, w, r, inputs[3], inputs[5], inputs[6]], outs, [hidden, direction, *reordered],
            scratch_bytes(4, hidden, seq))
    return outs[:len(node.output)]


def is_plain_lstm(node: onnx.NodeProto, inputs: list[Any]) -> bool:
    """Whether the LSTM plan op covers the node (which keeps the plans it has always made)."""
    attrs = attributes(node)
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    default = activation_names(node, dirs) == DEFAULT_ACTIVATIONS["LSTM"] * dirs and \
        not attrs.get("activation_alpha") and not attrs.get("activation_beta")
    return (node.op_type == "LSTM" and default and not attrs.get("layout", 0) and not attrs.get("input_forget", 0)
            and "clip" not in attrs and inputs[7] is None and full_lengths(node, inputs[4], shape_of(inputs[0])[0]))


def sequence_lengths(node: onnx.NodeProto, lengths: Any, seq: int) -> Any:
    """sequence_lens as the kernel reads it (int32), or None where it keeps every whole sequence."""
    if full_lengths(node, lengths, seq):
        return None
    return lengths if isinstance(lengths, Runtime) else constant(node, lengths, "sequence_lens").astype(np.int32)


@emitter("RNN", "GRU", "LSTM")
def emit_recurrent(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    inputs = list(inputs) + [None] * (8 - len(inputs))
    if is_plain_lstm(node, inputs):
        return emit_plain_lstm(lw, node, inputs)
    attrs = attributes(node)
    layout = attrs.get("layout", 0)
    seq, batch = shape_of(inputs[0])[:2][::-1] if layout else shape_of(inputs[0])[:2]
    hidden = attrs.get("hidden_size", shape_of(inputs[2])[2])
    direction = DIRECTIONS[attrs.get("direction", "forward")]
    dirs = 2 if direction == 2 else 1
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    shapes = [(batch, seq, dirs, hidden) if layout else (seq, dirs, batch, hidden), state]
    if node.op_type == "LSTM":
        shapes.append(state)
    outs = outputs_of(lw, node, shapes)
    w, r, reordered = reordered_weights(lw, inputs[1], inputs[2], seq)
    params = [CELLS[node.op_type], hidden, direction, layout, attrs.get("linear_before_reset", 0),
              attrs.get("input_forget", 0), int("clip" in attrs), F32(attrs.get("clip", 0.0)),
              *activation_params(node, dirs), *reordered]
    lengths = sequence_lengths(node, inputs[4], seq)
    lw.emit("Recurrent", [inputs[0], w, r, inputs[3], lengths, *inputs[5:]], outs, params,
            scratch_bytes(GATES[node.op_type], hidden, seq))
    return outs[:len(node.output)]
