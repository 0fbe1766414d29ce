"""Emitters: one function per ONNX op type that turns a node (at concrete shapes) into plan ops, one module per op
family (`tensor_ops`: elementwise, shape and layout ops; `nn_ops`: convolutions, products, normalization, reductions;
`pool_ops`; `recurrent_ops`: RNN, GRU, LSTM; `index_ops`: indexed reads and writes, fills, selections; `sampling_ops`:
Resize, GridSample; `signal_ops`: DFT, STFT, windows; `detection_ops`: RoiAlign, MaxUnpool, NonMaxSuppression;
`quant_ops`: the quantized ops; `composite_ops`: ops lowered as a few plan ops). Registered in `EMITTERS`; an op
missing here is reported by the lowering with its node name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from edgepack.runtime.errors import EdgepackError

from ..values import Runtime, Value

if TYPE_CHECKING:
    from ..lower import Lowering

Emitter = Callable[["Lowering", onnx.NodeProto, list[Any]], list[Any]]
EMITTERS: dict[str, Emitter] = {}
FLOAT_MAX = 3.4028234663852886e38


def emitter(*op_types: str) -> Callable[[Emitter], Emitter]:
    def register(function: Emitter) -> Emitter:
        for op_type in op_types:
            EMITTERS[op_type] = function
        return function

    return register


class Unsupported(EdgepackError):
    """A node whose attributes or inputs the core does not cover."""


def unsupported(node: onnx.NodeProto, why: str) -> Unsupported:
    return Unsupported(f"{node.op_type} node {node.name!r}: {why}", where=node.name or node.output[0],
                       fix="run this node on another provider, or change it to a form the cpu core covers")


class NotConstant(Unsupported):
    """An input that must be known when the plan is lowered is computed at run time (or is a model input)."""

    def __init__(self, node: onnx.NodeProto, what: str, value: Runtime) -> None:
        super().__init__(f"{node.op_type} node {node.name!r}: its {what} must be a constant once input shapes are "
                         "fixed", where=node.name or node.output[0],
                         fix="make it a constant in the model, or compute it from shapes only")
        self.value = value


def constant(node: onnx.NodeProto, value: Value | None, what: str) -> np.ndarray | None:
    if value is None:
        return None
    if isinstance(value, Runtime):
        raise NotConstant(node, what, value)
    return np.asarray(value)


def dtype_of(value: Value) -> str:
    return value.dtype if isinstance(value, Runtime) else np.asarray(value).dtype.name


def shape_of(value: Value) -> tuple[int, ...]:
    return value.shape if isinstance(value, Runtime) else tuple(np.asarray(value).shape)


# registration: each module's @emitter functions fill EMITTERS
from . import (  # noqa: E402,F401
    composite_ops,
    detection_ops,
    index_ops,
    nn_ops,
    pool_ops,
    quant_ops,
    recurrent_ops,
    sampling_ops,
    signal_ops,
    tensor_ops,
)
