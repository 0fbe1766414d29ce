"""onnxscript's optimizer: constant folding (Constant nodes too), dead code, inside subgraphs."""

from __future__ import annotations

import onnx_ir as ir
import onnxscript.optimizer

from . import register


@register("onnxscript-optimizer", "constant folding and dead-code removal by onnxscript's optimizer")
def apply(model: ir.Model) -> ir.Model:
    onnxscript.optimizer.optimize_ir(model)
    return model
