"""onnxslim: pattern fusions (Conv+BN, Gemm, ...), shape folding and dead-node elimination."""

from __future__ import annotations

import contextlib
import io

import onnx_ir as ir
import onnxslim

from . import register


@register("onnxslim", "fusions, shape folding and dead-node elimination by onnxslim")
def apply(model: ir.Model) -> ir.Model:
    with contextlib.redirect_stdout(io.StringIO()):  # onnxslim prints its own tables
        slimmed = onnxslim.slim(ir.to_proto(model))
    if slimmed is None:
        raise RuntimeError("onnxslim returned no model")
    return ir.from_proto(slimmed)
