"""LSTM (one layer; forward, reverse or bidirectional; batch-major layout too) as MIL `lstm`.

ONNX's gates are ordered input, output, forget, cell (iofc); MIL's input, forget, output, cell (ifoz), and MIL adds
the two biases into one. ONNX's states are (directions, batch, hidden), MIL's (batch, directions * hidden). MIL's
`reverse` direction emits its sequence in processing order (last time step first), so it is reversed back to ONNX's
time order; a bidirectional MIL lstm already emits both halves in time order. iOS15/16's lstm is fp32 only: an
fp16 input is cast to fp32 and the results back."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts
from .shape import constant

IOFC_TO_IFOZ = [0, 2, 1, 3]
DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"]


def _lstm_limit(node: onnx.NodeProto, values: Values) -> str | None:
    reason = constant(values, node, 1, 2, 3)
    if reason:
        return reason
    if len(node.input) > 4 and node.input[4]:
        return "sequence_lens is not supported"
    if len(node.input) > 7 and node.input[7]:
        return "peepholes (P) are not supported"
    if attribute(node, "clip") is not None:
        return "clip is not supported"
    if attribute(node, "input_forget", 0):
        return "input_forget is not supported"
    activations = attribute(node, "activations")
    direction = attribute(node, "direction", "forward")
    if activations is not None and list(activations) != DEFAULT_ACTIVATIONS * (2 if direction == "bidirectional"
                                                                                 else 1):
        return "only the default activations (Sigmoid, Tanh, Tanh)"
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) != 3 or None in shape:
        return "X needs a static rank-3 shape"
    return None


def _gates(array: np.ndarray, hidden: int) -> np.ndarray:
    """Rows of one direction's (4 * hidden, ...) weights or bias from iofc to ifoz order."""
    blocks = array.reshape(4, hidden, *array.shape[1:])
    return blocks[IOFC_TO_IFOZ].reshape(array.shape).astype(np.float32)


def _state(ctx: Context, node: onnx.NodeProto, index: int, batch: int, directions: int, hidden: int,
           layout: int, base: str) -> object:
    """initial_h or initial_c as MIL's (batch, directions * hidden) in fp32; zeros when absent."""
    value = ctx.input(node, index)
    if value is None:
        return np.zeros((batch, directions * hidden), np.float32)
    if isinstance(value, np.ndarray):
        state = value.astype(np.float32)
        state = state if layout else state.transpose(1, 0, 2)
        return state.reshape(batch, directions * hidden)
    if ctx.is_half(value):
        value = ctx.mb.cast(x=value, dtype="fp32", name=ctx.unique(f"{base}_fp32"))
    if not layout and directions > 1:
        value = ctx.mb.transpose(x=value, perm=[1, 0, 2], name=ctx.unique(f"{base}_batch_major"))
    return ctx.mb.reshape(x=value, shape=np.asarray([batch, directions * hidden], np.int32),
                          name=ctx.unique(f"{base}_flat"))


@converts("LSTM", limit=_lstm_limit)
def lstm(ctx: Context, node: onnx.NodeProto) -> None:
    mb = ctx.mb
    x = ctx.input(node, 0)
    half = ctx.is_half(x)
    layout = int(ctx.attr(node, "layout", 0))
    direction = ctx.attr(node, "direction", "forward")
    w, r, b = ctx.constant(node, 1), ctx.constant(node, 2), ctx.constant(node, 3)
    directions, hidden = r.shape[0], r.shape[2]
    base = ctx.unique(f"{node.name or 'lstm'}".replace("/", "_").replace(".", "_") or "lstm")
    if half:
        x = mb.cast(x=x, dtype="fp32", name=ctx.unique(f"{base}_x_fp32"))
    if layout:
        x = mb.transpose(x=x, perm=[1, 0, 2], name=ctx.unique(f"{base}_x_time_major"))
    steps, batch = ctx.shape(x)[:2]
    bias = (np.zeros((directions, 8 * hidden), np.float32) if b is None else b)
    bias = bias[:, :4 * hidden] + bias[:, 4 * hidden:]
    args = {"weight_ih": _gates(w[0], hidden), "weight_hh": _gates(r[0], hidden), "bias": _gates(bias[0], hidden)}
    if directions == 2:
        args.update(weight_ih_back=_gates(w[1], hidden), weight_hh_back=_gates(r[1], hidden),
                    bias_back=_gates(bias[1], hidden))
    sequence = bool(node.output[0])
    y, y_h, y_c = mb.lstm(x=x, initial_h=_state(ctx, node, 5, batch, directions, hidden, layout, f"{base}_h0"),
                          initial_c=_state(ctx, node, 6, batch, directions, hidden, layout, f"{base}_c0"),
                          direction=direction, output_sequence=sequence, **args, name=base)
    outputs = []
    if sequence:
        if direction == "reverse":
            y = mb.reverse(x=y, axes=[0], name=ctx.unique(f"{base}_in_time_order"))
        # (steps, batch, directions * hidden) -> (steps, directions, batch, hidden), or (batch, steps, ...)
        y = mb.reshape(x=y, shape=np.asarray([steps, batch, directions, hidden], np.int32),
                       name=ctx.unique(f"{base}_split_directions"))
        outputs.append(_out(ctx, node, 0, y, [1, 0, 2, 3] if layout else [0, 2, 1, 3], half))
    else:
        outputs.append(None)
    for index, state in ((1, y_h), (2, y_c)):
        if index < len(node.output) and node.output[index]:
            state = mb.reshape(x=state, shape=np.asarray([batch, directions, hidden], np.int32),
                               name=ctx.unique(f"{base}_state_{index}"))
            outputs.append(_out(ctx, node, index, state, None if layout else [1, 0, 2], half))
        else:
            outputs.append(None)
    for name, value in zip(node.output, outputs):
        if name and value is not None:
            ctx.values[name] = value


def _out(ctx: Context, node: onnx.NodeProto, index: int, value: object, perm: list[int] | None, half: bool) -> object:
    """`value` transposed by `perm` (unless it is None or moves only a size-1 dim) and cast back to fp16."""
    name = ctx.name(node, index)
    shape = ctx.shape(value)
    moved = [p for p in perm if shape[p] != 1] if perm is not None else []
    if moved != sorted(moved):
        value = ctx.mb.transpose(x=value, perm=perm, name=name if not half else ctx.unique(f"{name}_fp32"))
    elif perm is not None:
        value = ctx.mb.reshape(x=value, shape=np.asarray([shape[p] for p in perm], np.int32),
                               name=name if not half else ctx.unique(f"{name}_fp32"))
    if half:
        value = ctx.mb.cast(x=value, dtype="fp16", name=name)
    return value
