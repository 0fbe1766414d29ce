"""The ops the `cpu` provider claims, with the element types and limits its lowering and kernels cover. Shapes are
fixed when a plan is lowered, so inputs that shape an output (Reshape's shape, Slice's starts, Pad's pads, ...)
must be constants; the conformance suite checks every claim."""

from __future__ import annotations

from collections.abc import Callable

import onnx

from ..capability import OpClaim, Values, attribute

Limit = Callable[[onnx.NodeProto, Values], str | None]

F32 = frozenset({"float32"})
INDEX = frozenset({"int32", "int64"})
NUMBERS = frozenset({"float32", "int32", "int64"})
HELD = frozenset({"float32", "int32", "int64", "int8", "uint8", "bool"})
QUANTIZED = frozenset({"int8", "int4"})
SCALES = frozenset({"float32", "float16"})


def constants(*indices: int) -> Limit:
    """The inputs at `indices`, when present, must be constants."""

    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for i in indices:
            if i < len(node.input) and node.input[i] and node.input[i] not in values.constants:
                return f"input {i} ({node.input[i]!r}) must be a constant"
        return None

    return limit


def input_types(allowed: dict[int, frozenset[str]]) -> Limit:
    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for i, types in allowed.items():
            if i < len(node.input) and node.input[i] and values.types.get(node.input[i]) not in types:
                return f"input {i} must be {'/'.join(sorted(types))}"
        return None

    return limit


def single_output(node: onnx.NodeProto, values: Values) -> str | None:
    return "only the first output is supported" if len([o for o in node.output if o]) > 1 else None


def spatial_1d_2d(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) not in (3, 4):
        return "1-D and 2-D inputs only (rank 3 or 4, known)"
    return None


def every(*limits: Limit) -> Limit:
    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for check in limits:
            reason = check(node, values)
            if reason:
                return reason
        return None

    return limit


def mod_limit(node: onnx.NodeProto, values: Values) -> str | None:
    is_float = values.types.get(node.input[0]) == "float32"
    return None if is_float == bool(attribute(node, "fmod", 0)) else "fmod must be 1 for floats, 0 for integers"


def training_off(node: onnx.NodeProto, values: Values) -> str | None:
    return "training mode is not supported" if attribute(node, "training_mode", 0) else None


def lstm_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if attribute(node, "layout", 0) or attribute(node, "input_forget", 0) or attribute(node, "clip") is not None:
        return "layout 1, input_forget and clip are not supported"
    activations = [a.decode() if isinstance(a, bytes) else a for a in attribute(node, "activations", []) or []]
    if activations and activations not in (["Sigmoid", "Tanh", "Tanh"], ["Sigmoid", "Tanh", "Tanh"] * 2):
        return "only the default activations are supported"
    if len(node.input) > 7 and node.input[7]:
        return "peepholes are not supported"
    if len(node.input) > 4 and node.input[4]:
        return "sequence_lens is not supported"
    return None


def resize_limit(node: onnx.NodeProto, values: Values) -> str | None:
    if attribute(node, "mode", "nearest") not in ("nearest", "linear"):
        return "only nearest and linear modes"
    transform = attribute(node, "coordinate_transformation_mode", "half_pixel")
    if transform not in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                         "tf_half_pixel_for_nearest"):
        return f"coordinate transform {transform} is not supported"
    if attribute(node, "antialias", 0) or attribute(node, "axes") is not None or \
            attribute(node, "keep_aspect_ratio_policy", "stretch") != "stretch":
        return "antialias, axes and aspect-ratio policies are not supported"
    return None


def half_on_constants(node: onnx.NodeProto, values: Values) -> str | None:
    """float16 only as a quantized weight on its way to float32 (int4 scales): the data input is a constant."""
    if "float16" in {values.types.get(name) for name in [*node.input, *node.output] if name} and \
            node.input[0] not in values.constants:
        return "float16 only on constants (quantized weights)"
    return None


def _claims() -> list[OpClaim]:
    claims = []
    for op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
        claims.append(OpClaim(op, dtypes=NUMBERS))
    claims.append(OpClaim("Pow", dtypes=F32))
    claims.append(OpClaim("Mod", dtypes=NUMBERS, limit=mod_limit))
    for op in ("Sum", "Mean"):
        claims.append(OpClaim(op, dtypes=F32))
    for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        claims.append(OpClaim(op, dtypes=NUMBERS | {"bool"}, limit=input_types({0: NUMBERS, 1: NUMBERS})))
    for op in ("And", "Or", "Xor", "Not"):
        claims.append(OpClaim(op, dtypes=frozenset({"bool"})))
    for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "LeakyRelu",
               "HardSigmoid", "HardSwish", "Gelu", "Floor", "Ceil", "Elu", "Softplus", "Selu", "Celu",
               "Softsign", "ThresholdedRelu", "Round"):
        claims.append(OpClaim(op, dtypes=F32))
    for op in ("Abs", "Neg", "Sign"):
        claims.append(OpClaim(op, dtypes=NUMBERS))
    claims.append(OpClaim("Clip", dtypes=F32, limit=constants(1, 2)))
    claims += [
        OpClaim("Conv", dtypes=F32, limit=spatial_1d_2d),
        OpClaim("ConvTranspose", dtypes=F32, limit=spatial_1d_2d),
        OpClaim("MatMul", dtypes=F32),
        OpClaim("Gemm", dtypes=F32),
        OpClaim("MaxPool", dtypes=F32, limit=every(single_output, spatial_1d_2d)),
        OpClaim("AveragePool", dtypes=F32, limit=spatial_1d_2d),
        OpClaim("GlobalAveragePool", dtypes=F32, limit=spatial_1d_2d),
        OpClaim("GlobalMaxPool", dtypes=F32, limit=spatial_1d_2d),
        OpClaim("Softmax", dtypes=F32),
        OpClaim("LogSoftmax", dtypes=F32),
        OpClaim("BatchNormalization", dtypes=F32, limit=every(training_off, single_output, constants(1, 2, 3, 4))),
        OpClaim("LayerNormalization", dtypes=F32, limit=single_output),
        OpClaim("ArgMax", limit=input_types({0: F32})),
        OpClaim("ArgMin", limit=input_types({0: F32})),
        OpClaim("Transpose", dtypes=HELD),
        OpClaim("Concat", dtypes=HELD),
        OpClaim("Split", dtypes=HELD, limit=constants(1)),
        OpClaim("Slice", dtypes=HELD, limit=constants(1, 2, 3, 4)),
        OpClaim("Gather", dtypes=HELD, limit=input_types({1: INDEX})),
        OpClaim("Pad", dtypes=HELD, limit=constants(1, 2, 3)),
        OpClaim("Resize", dtypes=F32 | {"int64"}, limit=every(resize_limit, constants(1, 2, 3),
                                                               input_types({0: F32}))),
        OpClaim("Cast", dtypes=HELD | {"float16"}, limit=half_on_constants),
        OpClaim("CastLike", dtypes=HELD),
        OpClaim("Where", dtypes=HELD),
        OpClaim("Expand", dtypes=HELD, limit=constants(1)),
        OpClaim("Identity", dtypes=HELD),
        OpClaim("Dropout", dtypes=HELD, limit=every(single_output, constants(1, 2))),
        OpClaim("Reshape", dtypes=HELD | {"float16"}, limit=every(constants(1), half_on_constants)),
        OpClaim("DequantizeLinear", dtypes=SCALES | QUANTIZED,
                limit=every(constants(0, 1, 2), input_types({0: QUANTIZED, 1: SCALES}))),
        OpClaim("Flatten", dtypes=HELD),
        OpClaim("Squeeze", dtypes=HELD, limit=constants(1)),
        OpClaim("Unsqueeze", dtypes=HELD, limit=constants(1)),
        OpClaim("Shape", dtypes=HELD),
        OpClaim("Size", dtypes=HELD),
        OpClaim("ConstantOfShape", dtypes=HELD, limit=constants(0)),
        OpClaim("Range", dtypes=NUMBERS, limit=constants(0, 1, 2)),
        OpClaim("Constant", dtypes=HELD),
        OpClaim("LSTM", dtypes=F32, limit=lstm_limit),
        OpClaim("If", dtypes=HELD),
    ]
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
               "ReduceL2", "ReduceLogSum"):
        claims.append(OpClaim(op, dtypes=F32 | {"int64"}, limit=every(constants(1), input_types({0: F32}))))
    return claims


CLAIMS = _claims()
