"""The `reference` provider, the oracle: onnx's ReferenceEvaluator with edgepack's fixes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_batch_normalization import BatchNormalization_14
from onnx.reference.ops.op_conv import Conv
from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_25
from onnx.reference.ops.op_gemm import Gemm_7 as Gemm
from onnx.reference.ops.op_hardmax import Hardmax
from onnx.reference.ops.op_log_softmax import LogSoftmax
from onnx.reference.ops.op_loop import Loop as OnnxLoop
from onnx.reference.ops.op_matmul import MatMul
from onnx.reference.ops.op_softmax import Softmax

from ..capability import Capability, OpClaim, domain_of
from ..errors import EdgepackError
from . import Options, Provider, register
from .reference_limits import LIMITS, NOT_CLAIMED


class BatchNormalization(BatchNormalization_14):
    """Inference unless `training_mode` is set. onnx's opset 9-13 kernel takes batch statistics whenever the
    `momentum` attribute is present, which exporters (paddle2onnx) always write. Opsets 7 and 8 also have `spatial`,
    which onnx's evaluator refuses: 0 gives statistics per activation (shaped like one sample), not per channel."""

    op_domain = ""

    def _run(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
             epsilon: float | None = None, momentum: float | None = None, training_mode: int | None = None,
             spatial: int | None = None) -> tuple[Any, ...]:
        if training_mode:
            return super()._run(x, scale, bias, mean, var, epsilon=epsilon, momentum=momentum,
                                training_mode=training_mode)
        shape = (1, *mean.shape) if spatial == 0 else (1, -1) + (1,) * (x.ndim - 2)
        eps = 1e-5 if epsilon is None else epsilon
        y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)
        return (y.astype(x.dtype),)


class GlobalMaxPool(OpRun):
    """The maximum over every axis after the channel's, kept as size 1; onnx's kernel drops the channel axis of a
    3-D input ((1, 512, 508) gave (1, 1): magika's jax2tf export)."""

    op_domain = ""

    def _run(self, x: np.ndarray) -> tuple[np.ndarray]:
        return (np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True),)


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


class ConvTranspose(OpRun):
    """One product per kernel tap, added into the strided output window it fills. onnx's kernel scatters each output
    channel through a per-element Python loop (col2im) and takes minutes on a detection CNN's upsampling."""

    op_domain = ""

    def _run(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None, auto_pad: str | None = None,
             dilations: list[int] | None = None, group: int | None = None, kernel_shape: list[int] | None = None,
             output_padding: list[int] | None = None, output_shape: list[int] | None = None,
             pads: list[int] | None = None, strides: list[int] | None = None) -> tuple[Any, ...]:
        spatial, groups = x.shape[2:], group or 1
        rank = len(spatial)
        kernel = w.shape[2:]
        dilations, strides = list(dilations or [1] * rank), list(strides or [1] * rank)
        output_padding = list(output_padding or [0] * rank)
        reach = [strides[i] * (spatial[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1
                 for i in range(rank)]
        begins, output_shape = _transpose_window(reach, spatial, strides, auto_pad, output_shape, pads)
        per_group_in, per_group_out = x.shape[1] // groups, w.shape[1]
        grouped_x = x.reshape(x.shape[0], groups, per_group_in, *spatial)
        grouped_w = w.reshape(groups, per_group_in, per_group_out, *kernel)
        full = np.zeros((x.shape[0], groups, per_group_out, *reach), dtype=x.dtype)
        for tap in np.ndindex(*kernel):
            window = tuple(slice(tap[i] * dilations[i], tap[i] * dilations[i] + strides[i] * (spatial[i] - 1) + 1,
                                 strides[i]) for i in range(rank))
            product = np.einsum("ngc...,gcm->ngm...", grouped_x, grouped_w[(..., *tap)], optimize=True)
            full[(slice(None), slice(None), slice(None), *window)] += product
        full = full.reshape(x.shape[0], groups * per_group_out, *reach)
        y = np.zeros((x.shape[0], full.shape[1], *output_shape), dtype=x.dtype)
        source = tuple(slice(max(begins[i], 0), min(reach[i], begins[i] + output_shape[i])) for i in range(rank))
        target = tuple(slice(s.start - begins[i], s.stop - begins[i]) for i, s in enumerate(source))
        y[(slice(None), slice(None), *target)] = full[(slice(None), slice(None), *source)]
        if bias is not None:
            y += bias.reshape((1, -1) + (1,) * rank).astype(x.dtype)
        return (y,)


def _transpose_window(reach: list[int], spatial: tuple[int, ...], strides: list[int], auto_pad: str | None,
                      output_shape: list[int] | None, pads: list[int] | None) -> tuple[list[int], list[int]]:
    """Where a ConvTranspose's output starts within the full (unpadded) result and how long it is, per spatial axis:
    from explicit pads, or, when an output shape or SAME auto_pad fixes the length, with the total padding split as
    the spec says."""
    rank = len(spatial)
    if output_shape is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        pads = list(pads) if pads is not None else [0] * 2 * rank
        return pads[:rank], [reach[i] - pads[i] - pads[rank + i] for i in range(rank)]
    lengths = list(output_shape) if output_shape is not None else [strides[i] * spatial[i] for i in range(rank)]
    totals = [reach[i] - lengths[i] for i in range(rank)]
    return [total // 2 if auto_pad == "SAME_UPPER" else total - total // 2 for total in totals], lengths


def _coerced_to_2d_before_13(base: type) -> type:
    """`base` (Softmax, LogSoftmax, Hardmax) with its opset 1-12 meaning, which onnx's kernels lack: the input is
    seen as 2-D, [prod(shape[:axis]), prod(shape[axis:])], axis 1 by default, and normalized over the second axis
    (on a classifier head of [1, 1000, 1, 1] onnx's kernel normalized each single value to 1)."""

    def _run(self: Any, x: np.ndarray, axis: int | None = None) -> tuple[Any, ...]:
        if self.run_params["opsets"].get("", 13) >= 13:
            return base._run(self, x, axis=axis) if base is not LogSoftmax else base._run(self, x)
        given = next((a.i for a in self.onnx_node.attribute if a.name == "axis"), 1)
        first = given % x.ndim if x.ndim else 0
        rows = x.reshape(int(np.prod(x.shape[:first], dtype=np.int64)), -1)
        shifted = rows - rows.max(axis=1, keepdims=True)
        if base is Hardmax:
            y = np.zeros_like(rows)
            np.put_along_axis(y, rows.argmax(axis=1)[:, None], 1, axis=1)
        elif base is LogSoftmax:
            y = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        else:
            y = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        return (y.astype(x.dtype).reshape(x.shape),)

    namespace = {"op_domain": "", "_run": _run, "__doc__": _coerced_to_2d_before_13.__doc__}
    return type(base.__name__, (base,), namespace)


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


FIXES = [BatchNormalization, GlobalMaxPool, Loop, DequantizeLinear,
         *(_coerced_to_2d_before_13(op) for op in (Softmax, LogSoftmax, Hardmax)),
         *(_accumulating_in_fp32(op) for op in (Conv, ConvTranspose, Gemm, MatMul))]


class ReferencePartition:
    def __init__(self, model: onnx.ModelProto) -> None:
        try:
            self.evaluator = ReferenceEvaluator(model, new_ops=FIXES)
        except NotImplementedError as error:
            raise EdgepackError(f"the reference provider cannot run this model: "
                                f"{str(error).splitlines()[0].removesuffix(' in')}",
                                where=model.graph.name or "model",
                                fix="export the model without that op (ops onnx's ReferenceEvaluator lacks are "
                                    "listed in runtime/providers/reference_limits.py)") from None
        self.output_names = list(self.evaluator.output_names)

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The outputs by name. numpy's overflow and invalid-value warnings are off: onnx's Sigmoid computes both of
        its branches and picks one per element, and its LSTM gates take exp of large inputs, so every silero-vad run
        printed them for values it then discarded or that round correctly to 0 or 1. A non-finite output still shows
        in the outputs, which the verify stage compares."""
        with np.errstate(over="ignore", invalid="ignore"):
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
