"""MIL `lstm`: gates in ifoz order, one summed bias, states (batch, directions * hidden). `reverse` runs from the
last step and emits its sequence in that (processing) order; `bidirectional` emits both halves in time order."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel
from .elementwise import expit

ACTIVATIONS = {"sigmoid": expit, "tanh": np.tanh, "relu": lambda v: np.maximum(v, 0), "linear": lambda v: v,
               "hard_sigmoid": lambda v: np.clip(0.2 * v + 0.5, 0, 1), "scaled_tanh": lambda v: np.tanh(v)}


def _run(x: np.ndarray, h: np.ndarray, c: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, bias: np.ndarray | None,
         gate: Any, cell: Any, out: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One direction over the steps of `x` in order: (every step's h, last h, last c)."""
    hidden = w_hh.shape[1]
    bias = np.zeros(4 * hidden, np.float32) if bias is None else bias
    steps = []
    for x_t in x:
        z = x_t @ w_ih.T + h @ w_hh.T + bias
        i, f, o, g = (z[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = gate(f) * c + gate(i) * cell(g)
        h = gate(o) * out(c)
        steps.append(h)
    return np.stack(steps), h, c


@kernel("lstm")
def lstm(args: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if args.get("clip") is not None or args.get("peephole") is not None:
        raise NotImplementedError("lstm clip and peepholes have no kernel")
    x = np.asarray(args["x"], np.float32)
    h0, c0 = np.asarray(args["initial_h"], np.float32), np.asarray(args["initial_c"], np.float32)
    functions = [ACTIVATIONS[str(args.get(key, default)).lower()] for key, default in
                 (("recurrent_activation", "sigmoid"), ("cell_activation", "tanh"), ("activation", "tanh"))]
    direction = args.get("direction", "forward")
    hidden = np.asarray(args["weight_hh"]).shape[1]
    forward = (args["weight_ih"], args["weight_hh"], args.get("bias"))
    if direction == "bidirectional":
        backward = (args["weight_ih_back"], args["weight_hh_back"], args.get("bias_back"))
        ys_f, h_f, c_f = _run(x, h0[:, :hidden], c0[:, :hidden], *forward, *functions)
        ys_b, h_b, c_b = _run(x[::-1], h0[:, hidden:], c0[:, hidden:], *backward, *functions)
        ys = np.concatenate([ys_f, ys_b[::-1]], axis=-1)
        last = np.concatenate([ys_f[-1:], ys_b[-1:]], axis=-1)
        h, c = np.concatenate([h_f, h_b], axis=-1), np.concatenate([c_f, c_b], axis=-1)
    else:
        ys, h, c = _run(x[::-1] if direction == "reverse" else x, h0, c0, *forward, *functions)
        last = ys[-1:]
    return (ys if args.get("output_sequence", False) else last), h, c
