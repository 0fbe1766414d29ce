"""MIL `batch_norm` (per channel, axis 1), `instance_norm` (per sample and channel, over the spatial axes) and
`layer_norm` (over `axes`, gamma and beta shaped as those axes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


def _per_channel(value: Any, rank: int, default: float) -> np.ndarray:
    if value is None:
        return np.float32(default)
    return np.asarray(value, np.float32).reshape(-1, *[1] * (rank - 2))


@kernel("batch_norm")
def batch_norm(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    mean, variance = _per_channel(args["mean"], x.ndim, 0), _per_channel(args["variance"], x.ndim, 1)
    gamma, beta = _per_channel(args.get("gamma"), x.ndim, 1), _per_channel(args.get("beta"), x.ndim, 0)
    return (x - mean) / np.sqrt(variance + np.float32(args.get("epsilon", 1e-5))) * gamma + beta


@kernel("instance_norm")
def instance_norm(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    gamma, beta = _per_channel(args.get("gamma"), x.ndim, 1), _per_channel(args.get("beta"), x.ndim, 0)
    return (x - mean) / np.sqrt(variance + np.float32(args.get("epsilon", 1e-5))) * gamma + beta


@kernel("layer_norm")
def layer_norm(args: dict[str, Any]) -> np.ndarray:
    x = np.asarray(args["x"], np.float32)
    axes = args.get("axes")
    axes = tuple(range(x.ndim)) if axes is None else tuple(sorted(int(a) % x.ndim for a in np.atleast_1d(axes)))
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    result = (x - mean) / np.sqrt(variance + np.float32(args.get("epsilon", 1e-5)))
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    if args.get("gamma") is not None:
        result = result * np.asarray(args["gamma"], np.float32).reshape(shape)
    if args.get("beta") is not None:
        result = result + np.asarray(args["beta"], np.float32).reshape(shape)
    return result
