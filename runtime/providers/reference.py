"""The `reference` provider, the oracle: onnx's ReferenceEvaluator with edgepack's fixes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.ops.op_batch_normalization import BatchNormalization_14
from onnx.reference.ops.op_conv import Conv
from onnx.reference.ops.op_conv_transpose import ConvTranspose
from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_25
from onnx.reference.ops.op_gemm import Gemm_7 as Gemm
from onnx.reference.ops.op_loop import Loop as OnnxLoop
from onnx.reference.ops.op_matmul import MatMul

from ..capability import Capability, OpClaim, domain_of
from . import Options, Provider, register
from .reference_limits import LIMITS, NOT_CLAIMED


class BatchNormalization(BatchNormalization_14):
    """Inference unless `training_mode` is set. onnx's opset 9-13 kernel takes batch statistics whenever the
    `momentum` attribute is present, which exporters (paddle2onnx) always write."""

    op_domain = ""

    def _run(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
             epsilon: float | None = None, momentum: float | None = None, training_mode: int | None = None
             ) -> tuple[Any, ...]:
        if training_mode:
            return super()._run(x, scale, bias, mean, var, epsilon=epsilon, momentum=momentum,
                                training_mode=training_mode)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        eps = 1e-5 if epsilon is None else epsilon
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
        return (y.astype(x.dtype),)


class Loop(OnnxLoop):
    """Scan outputs stacked on a new first axis, as the spec says; onnx's kernel `vstack`s them, which is only
    right for 1-D values (scalars come out as (n, 1))."""

    op_domain = ""

    def __init__(self, onnx_node: onnx.NodeProto, run_params: dict[str, Any]) -> None:
        super().__init__(onnx_node, run_params)
        self._scan_shapes: list[tuple[int, ...]] = []
        run_body = self._run_body  # set per instance by OpRun from the `body` attribute

        def run_and_record_scan_shapes(*args: Any, **kwargs: Any) -> list[Any]:
            outputs = run_body(*args, **kwargs)
            self._scan_shapes = [np.shape(value) for value in outputs[len(outputs) - self.K:]] if self.K else []
            return outputs

        self._run_body = run_and_record_scan_shapes

    def _run(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        self._scan_shapes = []
        results = list(super()._run(*args, **kwargs))
        for k, shape in enumerate(self._scan_shapes):
            index = self.N + k
            results[index] = results[index].reshape((-1, *shape))
        return tuple(results)


class DequantizeLinear(DequantizeLinear_25):
    """Every opset: onnx's evaluator has kernels from opset 19 only, and the latest one computes what opsets 10-18
    define for their types (int8/uint8/int32, per tensor or per axis)."""

    op_domain = ""


def _accumulating_in_fp32(base: type) -> type:
    """`base` (a product op) computing fp16 inputs in fp32 and rounding the result once to fp16, as fp16 hardware
    accumulates; numpy's fp16 products have no BLAS and take minutes on a detection CNN."""

    def _run(self: Any, *inputs: Any, **attributes: Any) -> tuple[Any, ...]:
        if not any(isinstance(x, np.ndarray) and x.dtype == np.float16 for x in inputs):
            return base._run(self, *inputs, **attributes)
        wide = [x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype == np.float16 else x for x in inputs]
        return tuple(y.astype(np.float16) for y in base._run(self, *wide, **attributes))

    namespace = {"op_domain": "", "_run": _run, "__doc__": _accumulating_in_fp32.__doc__}
    return type(base.__name__.split("_")[0], (base,), namespace)


FIXES = [BatchNormalization, Loop, DequantizeLinear,
         *(_accumulating_in_fp32(op) for op in (Conv, ConvTranspose, Gemm, MatMul))]


class ReferencePartition:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.evaluator = ReferenceEvaluator(model, new_ops=FIXES)
        self.output_names = list(self.evaluator.output_names)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.evaluator.run(None, feeds)))


def _claims() -> list[OpClaim]:
    """Every op of the standard domains, less those listed in `reference_limits` with their reasons."""
    names = {(domain_of(s.domain), s.name) for s in onnx.defs.get_all_schemas_with_history()
             if domain_of(s.domain) in ("", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training")}
    return [OpClaim(op_type, domain, **LIMITS.get(op_type, {})) for domain, op_type in sorted(names)
            if op_type not in NOT_CLAIMED]


def compile_partition(model: onnx.ModelProto, options: Options) -> ReferencePartition:
    return ReferencePartition(model)


PROVIDER = register(Provider("reference", "onnx's ReferenceEvaluator on numpy, with edgepack's fixes: the oracle",
                             Capability(_claims()), compile_partition))
