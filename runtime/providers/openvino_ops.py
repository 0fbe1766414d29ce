"""The ops the `openvino` provider claims, with the element types and attribute limits under which OpenVINO's ONNX
frontend and CPU plugin (2026.4, f32 inference) agree with the onnx node tests.

`MEASURED` lists, per op, the element types seen in passing node cases; `LIMITS` and `NOT_CLAIMED` answer each
node case that failed. The conformance suite (`tests/runtime/conformance/`) checks the table both ways: every case
made of claimed nodes passes.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx

from ..capability import OpClaim, Values, attribute

MEASURED: dict[str, str] = {
    "Abs": "float32",
    "Acos": "float32",
    "Acosh": "float32",
    "Adagrad": "float32 int64",
    "Adam": "float32 int64",
    "Add": "float16 float32 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "AffineGrid": "float32 int64",
    "And": "bool",
    "ArgMax": "float32 int64",
    "ArgMin": "float32 int64",
    "ArrayFeatureExtractor": "float32 int64",
    "Asin": "float32",
    "Asinh": "float32",
    "Atan": "float32",
    "Atanh": "float32",
    "Attention": "bool float16 float32 int64",
    "AveragePool": "float32",
    "BatchNormalization": "float32",
    "Binarizer": "float32",
    "BitShift": "int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "BitwiseAnd": "int16 int32 uint64 uint8",
    "BitwiseNot": "int32 uint16 uint8",
    "BitwiseOr": "int32 int8 uint64 uint8",
    "BitwiseXor": "int16 int32 uint64 uint8",
    "BlackmanWindow": "float32 int32",
    "Cast": "bool float16 float32 float64 int32 int64 uint8",
    "CastLike": "float16 float32 float64",
    "Ceil": "float32",
    "Celu": "float32",
    "CenterCropPad": "float32 int64",
    "Clip": "float32 int8",
    "Col2Im": "float32 int64",
    "Compress": "bfloat16 bool float32",
    "Concat": "float16 float32 int64",
    "Constant": "float32 int64",
    "ConstantOfShape": "float32 int32 int64",
    "Conv": "float16 float32",
    "ConvInteger": "int32 uint8",
    "ConvTranspose": "float32",
    "Cos": "float32",
    "Cosh": "float32",
    "CumSum": "float64 int32",
    "DepthToSpace": "float32",
    "DequantizeLinear": "float32 int16 uint16 uint8",
    "Div": "float16 float32 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "DynamicQuantizeLinear": "float32 uint8",
    "Einsum": "bfloat16 float64",
    "Elu": "float16 float32",
    "Equal": "bool float16 float32 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "Erf": "float32",
    "Exp": "float32 float64",
    "Expand": "float16 float32 float64 int64",
    "EyeLike": "float32 float64 int32",
    "Flatten": "float32",
    "FlexAttention": "float16 float32 float64",
    "Floor": "float32",
    "GRU": "float32",
    "Gather": "float32 int64",
    "GatherElements": "float32 int64",
    "GatherND": "float32 int32 int64",
    "Gelu": "float32",
    "Gemm": "float32",
    "GlobalAveragePool": "float32",
    "GlobalMaxPool": "float32",
    "Greater": "bool float32 int16 int8 uint16 uint32 uint64 uint8",
    "GreaterOrEqual": "bool float32 int16 int64 int8 uint16 uint32 uint64 uint8",
    "GridSample": "float32",
    "GroupNormalization": "float32",
    "HammingWindow": "float32 int32",
    "HannWindow": "float32 int32",
    "HardSigmoid": "float32",
    "HardSwish": "float32",
    "Hardmax": "float32",
    "Identity": "bool float16 float32 float64 int32 int64 int8 uint8",
    "If": "bool float32",
    "InstanceNormalization": "float32",
    "IsInf": "bool float16 float32",
    "IsNaN": "bool float16 float32",
    "LRN": "float32",
    "LSTM": "float32",
    "LabelEncoder": "int16 int64 object",
    "LayerNormalization": "float32",
    "LeakyRelu": "float32",
    "Less": "bool float32 int16 int64 int8 uint16 uint32 uint64 uint8",
    "LessOrEqual": "bool float32 int16 int64 int8 uint16 uint32 uint64 uint8",
    "Log": "float32 float64",
    "LogSoftmax": "float32",
    "Loop": "bool float32 int32 int64",
    "LpNormalization": "float32",
    "LpPool": "float32",
    "MatMul": "float16 float32 float64",
    "MatMulInteger": "int32 uint8",
    "Max": "float16 float32 float64 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "MaxPool": "float32 int64 uint8",
    "Mean": "float32",
    "MeanVarianceNormalization": "float32",
    "Min": "float16 float32 float64 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "Mish": "float32",
    "Mod": "float16 float32 float64 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "Momentum": "float32 int64",
    "Mul": "float16 float32 float64 int16 int64 int8 uint16 uint32 uint64 uint8",
    "Neg": "float32 int64",
    "NegativeLogLikelihoodLoss": "float32 int64",
    "NonMaxSuppression": "float32 int64",
    "NonZero": "bool int64",
    "Not": "bool",
    "OneHot": "bfloat16 float32 int32 int64",
    "Or": "bool",
    "PRelu": "float32",
    "Pad": "float16 float32 int32 int64",
    "Pow": "float32 int32 int64 uint32 uint64",
    "QLinearConv": "float32 uint8",
    "QLinearMatMul": "float16 float32 int8 uint8",
    "QuantizeLinear": "float32 int16 uint16 uint8",
    "RMSNormalization": "float32",
    "RNN": "float32",
    "Range": "float16 float32 int32 int64",
    "Reciprocal": "float32",
    "ReduceL1": "float32 int64",
    "ReduceL2": "float32 int64",
    "ReduceLogSum": "float32 int64",
    "ReduceLogSumExp": "float32 float64 int64",
    "ReduceMax": "bool float16 float32 int64",
    "ReduceMean": "float32 int64",
    "ReduceMin": "bool float32 int64",
    "ReduceProd": "float32 int64",
    "ReduceSum": "float32 float64 int64",
    "ReduceSumSquare": "float32 int64",
    "Relu": "float32",
    "Reshape": "float16 float32 float64 int64",
    "Resize": "float32 int64",
    "ReverseSequence": "bfloat16 float32 int64",
    "RoiAlign": "float32 int64",
    "RotaryEmbedding": "float32 int64",
    "Round": "float32",
    "Scan": "float32",
    "Scatter": "float32 int64",
    "ScatterElements": "float32 int64",
    "ScatterND": "float32 int64",
    "Selu": "float32",
    "Shape": "bool float16 float32 float64 int64",
    "Shrink": "float32",
    "Sigmoid": "float32",
    "Sign": "float32",
    "Sin": "float32",
    "Sinh": "float32",
    "Size": "float32 int64",
    "Slice": "float16 float32 int64",
    "Softmax": "float16 float32 float64",
    "SoftmaxCrossEntropyLoss": "float32 int64",
    "Softplus": "float32",
    "Softsign": "float32",
    "SpaceToDepth": "float32",
    "Split": "float32 int64",
    "Sqrt": "float32",
    "Squeeze": "bool float32 int64",
    "Sub": "float32 int16 int32 int64 int8 uint16 uint32 uint64 uint8",
    "Sum": "float32",
    "Swish": "float16 float32",
    "Tan": "float32",
    "Tanh": "float32",
    "ThresholdedRelu": "float32",
    "Tile": "float32 int64",
    "TopK": "float32 int64 uint64",
    "Transpose": "float16 float32 float64",
    "TreeEnsemble": "float32 float64",
    "Trilu": "int64",
    "Unique": "bfloat16 float32 int64",
    "Unsqueeze": "float16 float32 float64 int64",
    "Upsample": "float32",
    "Where": "bool float16 float32 int64 int8",
    "Xor": "bool",
}

NOT_CLAIMED: dict[str, str] = {
    "Attention": "results differ from the spec for windowed, causal-with-past and fully masked cases",
    "BitShift": "shifts past the width and negative inputs differ from the spec",
    "Col2Im": "5-D inputs fail to convert",
    "DynamicQuantizeLinear": "rounds half values differently from the spec",
    "NonMaxSuppression": "boxes exactly at the IoU threshold are kept differently",
    "ReduceMax": "gives -FLT_MAX instead of -inf for an empty or all -inf slice",
    "ReduceMin": "starts from FLT_MAX instead of inf, as ReduceMax starts from -FLT_MAX",
    "Scan": "fails to convert the Scan bodies of the linear attention cases",
    "Tile": "wrong values on the node test (test_tile)",
    "TopK": "ties are not broken by the lower index as the spec says",
}


def _refuse(condition: Callable[[onnx.NodeProto, Values], bool], reason: str
            ) -> Callable[[onnx.NodeProto, Values], str | None]:
    return lambda node, values: reason if condition(node, values) else None


def _attr_is(name: str, *refused: object) -> Callable[[onnx.NodeProto, Values], bool]:
    return lambda node, values: attribute(node, name) in refused


def _axes_not_constant(node: onnx.NodeProto, values: Values) -> bool:
    return len(node.input) > 1 and bool(node.input[1]) and node.input[1] not in values.constants


def _involves(dtype: str) -> Callable[[onnx.NodeProto, Values], bool]:
    return lambda node, values: any(values.types.get(n) == dtype for n in [*node.input, *node.output] if n)


def _rank_not(rank: int) -> Callable[[onnx.NodeProto, Values], bool]:
    return lambda node, values: len(values.shapes.get(node.input[0], [None] * (rank + 1))) != rank


def _resize_refused(node: onnx.NodeProto, values: Values) -> str | None:
    mode = attribute(node, "mode", "nearest")
    transform = attribute(node, "coordinate_transformation_mode", "half_pixel")
    if mode == "cubic":
        return "mode 'cubic' is not supported"
    if transform == "tf_crop_and_resize":
        return "coordinate_transformation_mode 'tf_crop_and_resize' is not supported"
    if transform == "half_pixel_symmetric":
        return "coordinate_transformation_mode 'half_pixel_symmetric' is not supported"
    if mode == "linear" and transform == "align_corners":
        return "linear with align_corners is not supported"
    if attribute(node, "antialias", 0):
        return "antialias is not supported"
    if attribute(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
        return "keep_aspect_ratio_policy other than 'stretch' is not supported"
    return None


_AXES = _refuse(_axes_not_constant, "axes must be a constant")
_RANK_FROM_AXES = _refuse(lambda n, v: _axes_not_constant(n, v) and attribute(n, "keepdims", 1) == 0,
                          "with keepdims=0 the axes must be a constant (OpenVINO needs a static output rank)")
_ONE_INPUT = _refuse(lambda n, v: len(n.input) == 1, "a single input is not supported")
_BATCHWISE = _refuse(_attr_is("layout", 1), "layout 1 (batch first) is not supported")

LIMITS: dict[str, Callable[[onnx.NodeProto, Values], str | None]] = {
    "Resize": _resize_refused,
    "Unsqueeze": _AXES,
    "Squeeze": _AXES,
    "ReduceLogSum": _RANK_FROM_AXES,
    "ReduceSum": _RANK_FROM_AXES,
    "Cast": _refuse(_involves("float64"), "float64 is computed in float32"),
    "CastLike": _refuse(_involves("float64"), "float64 is computed in float32"),
    "Einsum": _refuse(_involves("bfloat16"), "bfloat16 is not supported"),
    "Mod": _refuse(lambda n, v: attribute(n, "fmod", 0) == 0 and any(
        v.types.get(i, "").startswith(("float", "bfloat")) for i in n.input), "float inputs need fmod=1"),
    "GridSample": _refuse(_rank_not(4), "only 4-D inputs of known rank are supported"),
    "GRU": _BATCHWISE,
    "LSTM": _BATCHWISE,
    "RNN": _BATCHWISE,
    "Max": _ONE_INPUT,
    "Min": _ONE_INPUT,
    "Sum": _ONE_INPUT,
    "MaxPool": _refuse(_attr_is("ceil_mode", 1), "ceil_mode 1 is not supported"),
    "Pad": _refuse(_attr_is("mode", "wrap"), "mode 'wrap' is not supported"),
    "QuantizeLinear": _refuse(lambda n, v: (attribute(n, "block_size", 0) or 0) > 0, "blocked quantization"),
    "RoiAlign": _refuse(_attr_is("mode", "max"), "mode 'max' is not supported"),
    "SpaceToDepth": _refuse(_attr_is("mode", "CRD"), "mode 'CRD' is not supported"),
}

CLAIMS = [OpClaim(op, dtypes=frozenset(dtypes.split()), limit=LIMITS.get(op))
          for op, dtypes in MEASURED.items() if op not in NOT_CLAIMED]
