"""MIL `pad`: the last len(pad) / 2 axes, modes constant, reflect and replicate (numpy's edge)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ints, kernel

NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


@kernel("pad")
def pad(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"])
    flat = ints(args["pad"], [])
    padded = len(flat) // 2
    amounts = [(0, 0)] * (x.ndim - padded) + [(flat[2 * i], flat[2 * i + 1]) for i in range(padded)]
    mode = args.get("mode", "constant")
    extra = {"constant_values": args.get("constant_val", 0.0)} if mode == "constant" else {}
    return np.pad(x, amounts, mode=NUMPY_MODES[mode], **extra)
