"""Cast and CastLike (MIL `cast` between fp32, fp16, int32 and bool), and the ops that pass their input through:
Identity and inference-mode Dropout (MIL `identity`)."""

from __future__ import annotations

import numpy as np
import onnx

from ....capability import Values, attribute
from ..context import Context
from . import converts
from .shape import DATA_TYPES, constant, fold

MIL_DTYPES = {"float32": "fp32", "float16": "fp16", "int32": "int32", "bool": "bool"}
CAST_TYPES = DATA_TYPES | {"bool"}


def _target(node: onnx.NodeProto, values: Values) -> str | None:
    if node.op_type == "CastLike":
        return values.types.get(node.input[1])
    to = attribute(node, "to")
    return onnx.helper.tensor_dtype_to_np_dtype(to).name if isinstance(to, int) and to else None


def _cast_limit(node: onnx.NodeProto, values: Values) -> str | None:
    source = node.input[0]
    if source not in values.constants and values.types.get(source) not in DATA_TYPES:
        return f"a {values.types.get(source)} input cannot come into a CoreML program"
    target = _target(node, values)
    if source not in values.constants and target not in MIL_DTYPES:
        return f"MIL casts to fp32, fp16, int32 or bool, not {target}"
    if attribute(node, "saturate", 1) != 1:
        return "saturate=0 is for float8 types"
    return None


def _numpy_target(ctx: Context, node: onnx.NodeProto) -> np.dtype:
    if node.op_type == "CastLike":
        like = ctx.input(node, 1)
        return like.dtype if isinstance(like, np.ndarray) else np.dtype(ctx.types.nptype_from_builtin(like.dtype))
    return onnx.helper.tensor_dtype_to_np_dtype(int(ctx.attr(node, "to")))


@converts("Cast", "CastLike", limit=_cast_limit, types=CAST_TYPES)
def cast(ctx: Context, node: onnx.NodeProto) -> None:
    target = _numpy_target(ctx, node)
    if fold(ctx, node, lambda data, *_: data.astype(target)):
        return
    x = ctx.input(node, 0)
    if isinstance(x, np.ndarray):
        ctx.set(node, x.astype(target))
        return
    if np.dtype(ctx.types.nptype_from_builtin(x.dtype)) == target:
        ctx.set(node, ctx.mb.identity(x=x, name=ctx.name(node)))
        return
    ctx.set(node, ctx.mb.cast(x=x, dtype=MIL_DTYPES[target.name], name=ctx.name(node)))


@converts("Identity", types=CAST_TYPES)
def identity(ctx: Context, node: onnx.NodeProto) -> None:
    if not fold(ctx, node, lambda data: data):
        ctx.set(node, ctx.mb.identity(x=ctx.input(node, 0), name=ctx.name(node)))


def _dropout_limit(node: onnx.NodeProto, values: Values) -> str | None:
    reason = constant(values, node, 1, 2)
    if reason:
        return reason
    if len(node.input) > 2 and node.input[2]:
        return "training_mode must be absent (inference only)"
    if attribute(node, "is_test", 1) == 0:
        return "is_test=0 is training mode (inference only)"
    return None


@converts("Dropout", limit=_dropout_limit, types=DATA_TYPES | {"bool"})
def dropout(ctx: Context, node: onnx.NodeProto) -> None:
    """Inference: the input unchanged, and an all-true mask when asked for."""
    x = ctx.input(node, 0)
    out = x if isinstance(x, np.ndarray) else ctx.mb.identity(x=x, name=ctx.name(node))
    mask = np.ones(tuple(int(d) for d in x.shape), dtype=bool)
    ctx.set(node, out, mask)
