"""MIL's `reduce_*` ops over `axes` (every axis when absent), keeping the reduced axes as 1 with keep_dims."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


def _logsumexp(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    peak = np.max(x, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0)
    result = np.log(np.sum(np.exp(x - peak), axis=axis, keepdims=True)) + peak
    return result if keepdims else np.squeeze(result, axis=axis)


REDUCTIONS = {
    "reduce_mean": np.mean, "reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_prod": np.prod,
    "reduce_l1_norm": lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims),
    "reduce_l2_norm": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
    "reduce_sum_square": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
    "reduce_log_sum": lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)),
    "reduce_log_sum_exp": _logsumexp,
}


def _reduction(function: Any) -> Any:
    def run(args: dict[str, Any]) -> np.ndarray:
        x = np.asarray(args["x"], np.float32)
        axes = args.get("axes")
        axis = tuple(range(x.ndim)) if axes is None else tuple(int(a) % x.ndim for a in np.atleast_1d(axes))
        return np.asarray(function(x, axis=axis, keepdims=bool(args.get("keep_dims", False))))

    return run


for _name, _function in REDUCTIONS.items():
    kernel(_name)(_reduction(_function))

