"""The `reference` provider, the oracle: onnx's ReferenceEvaluator with edgepack's fixes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.ops.op_batch_normalization import BatchNormalization_14

from . import register


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


FIXES = [BatchNormalization]


class ReferencePartition:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.evaluator = ReferenceEvaluator(model, new_ops=FIXES)
        self.output_names = list(self.evaluator.output_names)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(self.output_names, self.evaluator.run(None, feeds)))


@register("reference")
def compile_partition(model: onnx.ModelProto) -> ReferencePartition:
    return ReferencePartition(model)
