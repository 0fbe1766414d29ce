"""The ops the `cpu` provider claims (read from the op contract, ops.toml), with the element types and limits its
lowering and kernels cover. Shapes are fixed when a plan is lowered, so inputs that shape an output (Reshape's shape,
Slice's starts, Pad's pads, ...) must be known then: constants, values computed from shapes, or model inputs (a plan
per value); the conformance suite checks every claim."""

from __future__ import annotations

import math
from collections.abc import Callable

import onnx

from ..capability import OpClaim, Values, attribute
from ..native.op_contract import Claim, contract

Limit = Callable[[onnx.NodeProto, Values], str | None]

SETS = contract().dtype_sets
"""The dtype sets of the op contract (ops.toml's [dtype_sets])."""


def constants(*indices: int) -> Limit:
    """The inputs at `indices`, when present, must be known when the plan is lowered: constants, values computed from
    shapes, or model inputs (the plan is then lowered for their values and guards them)."""

    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for i in indices:
            if i < len(node.input) and node.input[i] and node.input[i] not in values.known and \
                    node.input[i] not in values.model_inputs:
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


def pool_spatial(node: onnx.NodeProto, values: Values) -> str | None:
    shape = values.shapes.get(node.input[0])
    if shape is None or not 3 <= len(shape) <= 8:
        return "1-D to 6-D inputs only (rank 3 to 8, known)"
    return None


def every(*limits: Limit) -> Limit:
    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for check in limits:
            reason = check(node, values)
            if reason:
                return reason
        return None

    return limit


def einsum_limit(node: onnx.NodeProto, values: Values) -> str | None:
    terms = str(attribute(node, "equation", "")).replace(" ", "").partition("->")[0].replace("...", "").split(",")
    return "repeated labels within one operand (a diagonal) are not supported" if \
        any(len(set(term)) != len(term) for term in terms) else None


def training_off(node: onnx.NodeProto, values: Values) -> str | None:
    return "training mode is not supported" if attribute(node, "training_mode", 0) else None


RECURRENT_ACTIVATIONS = {"RNN": 1, "GRU": 2, "LSTM": 3}
"""How many activations each recurrent op takes per direction."""
TAKES_ALPHA = {"Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"}
TAKES_BETA = {"Affine", "ScaledTanh", "HardSigmoid"}
ACTIVATIONS = TAKES_ALPHA | {"Relu", "Tanh", "Sigmoid", "Softsign", "Softplus"}


def recurrent_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """RNN, GRU and LSTM: float32 values but int32 sequence_lens, and activations named in full (per direction) with
    every alpha and beta they take."""
    typed = [*((name, "int32" if i == 4 else "float32") for i, name in enumerate(node.input)),
             *((name, "float32") for name in node.output)]
    if any(name and values.types.get(name) != dtype for name, dtype in typed):
        return "float32 values and int32 sequence_lens only"
    names = [a.decode() if isinstance(a, bytes) else a for a in attribute(node, "activations", []) or []]
    dirs = 2 if attribute(node, "direction", "forward") in ("bidirectional", b"bidirectional") else 1
    if names and (len(names) != RECURRENT_ACTIVATIONS[node.op_type] * dirs or not set(names) <= ACTIVATIONS):
        return "activations must be known ones, one list entry per direction and gate function"
    if len(attribute(node, "activation_alpha", []) or []) != sum(name in TAKES_ALPHA for name in names) or \
            len(attribute(node, "activation_beta", []) or []) != sum(name in TAKES_BETA for name in names):
        return "activation_alpha and activation_beta must give exactly the values the activations take"
    return None


def nms_thresholds_given(node: onnx.NodeProto, values: Values) -> str | None:
    """NonMaxSuppression is computed by onnx's reference when the plan is lowered, which fails without
    max_output_boxes_per_class or iou_threshold."""
    given = len(node.input) > 3 and node.input[2] and node.input[3]
    return None if given else "max_output_boxes_per_class and iou_threshold must be given"


RESIZE_TRANSFORMS = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nearest",
                     "half_pixel_symmetric", "tf_crop_and_resize")


def resize_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """Resize and Upsample: the modes, coordinate transforms and aspect-ratio policies ONNX defines."""
    if attribute(node, "mode", "nearest") not in ("nearest", "linear", "bilinear", "cubic"):
        return "only nearest, linear and cubic modes"
    if attribute(node, "coordinate_transformation_mode", "half_pixel") not in RESIZE_TRANSFORMS:
        return "unknown coordinate transform"
    if attribute(node, "keep_aspect_ratio_policy", "stretch") not in ("stretch", "not_larger", "not_smaller"):
        return "unknown keep_aspect_ratio_policy"
    return None


def resize_gpu_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """What the WGSL Resize kernel covers."""
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


def grid_sample_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """GridSample: float32 input and grid with 1 to 3 spatial axes."""
    if any(values.types.get(name) != "float32" for name in node.input[:2]):
        return "float32 input and grid only"
    shape = values.shapes.get(node.input[0])
    return None if shape is not None and 3 <= len(shape) <= 5 else "1 to 3 spatial axes only (rank 3 to 5, known)"



def real_or_complex_signal(node: onnx.NodeProto, values: Values) -> str | None:
    """DFT and STFT: a float32 signal whose last dimension holds a real (1) or complex (2) sample, of rank 2 or more."""
    if values.types.get(node.input[0]) != "float32":
        return "float32 signals only"
    shape = values.shapes.get(node.input[0])
    if shape is None or len(shape) < 2 or shape[-1] not in (1, 2):
        return "the signal's last dimension must be 1 (real) or 2 (complex), rank 2 or more (known)"
    return None

def _count(values: Values, node: onnx.NodeProto, i: int) -> int | None:
    """The element count of input i (1 when absent; None when unknown)."""
    if i >= len(node.input) or not node.input[i]:
        return 1
    shape = values.shapes.get(node.input[i])
    return None if shape is None or None in shape else int(math.prod(shape))


def _rank(values: Values, name: str) -> int:
    return len(values.shapes.get(name) or [])


def _per_index(values: Values, node: onnx.NodeProto, i: int, length: int | None) -> bool:
    """Input i is absent, holds one value, or is 1-D with `length` values."""
    return _count(values, node, i) == 1 or (_rank(values, node.input[i]) == 1 and _count(values, node, i) == length)


def _last(values: Values, name: str, axis: int) -> int | None:
    shape = values.shapes.get(name) or []
    return shape[axis] if len(shape) >= abs(axis) else None


def quantize_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """QuantizeLinear on float32 to int8/uint8 with float32 scales (per tensor, per axis or blocked);
    DynamicQuantizeLinear on float32."""
    x = values.types.get(node.input[0])
    scale = values.types.get(node.input[1]) if len(node.input) > 1 else "float32"
    return None if x == "float32" and scale == "float32" else "float32 input and scales only"


def _dequantize_runtime(node: onnx.NodeProto, values: Values) -> str | None:
    x, scale = (values.types.get(name) for name in node.input[:2])
    zero = values.types.get(node.input[2]) if len(node.input) > 2 and node.input[2] else x
    if x not in ("int8", "uint8", "int32") or scale != "float32" or zero != x or \
            values.types.get(node.output[0]) != "float32":
        return "int8, uint8 or int32 values with float32 scales only"
    return None


def dequantize_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """DequantizeLinear: of constant weights, the quantized weights (int8/int4 with float32/float16 scales); over
    run-time values, int8/uint8/int32 with float32 scales."""
    if all(name in values.constants for name in node.input if name):
        used = {values.types.get(name) for name in [*node.input, *node.output] if name}
        if not used <= SETS["quantized"] | SETS["scales"]:
            return "constant values must be int8 or int4 with float32 or float16 scales"
        return weights(0, 1, 2)(node, values) or LIMITS["dequantize_types"](node, values)
    return _dequantize_runtime(node, values)


def _product_shapes(values: Values, a: str, b: str) -> str | None:
    sa, sb = values.shapes.get(a), values.shapes.get(b)
    if sa is None or sb is None or len(sa) < 2 or len(sb) < 2:
        return "operands of rank 2 or more only"
    if len(sa) != 2 and len(sb) != 2 and sa[:-2] != sb[:-2]:
        return "batch dimensions must be equal, or one operand 2-D"
    return None


def integer_product_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """MatMulInteger and ConvInteger: zero points one, or per column of a 2-D B / per output channel of W."""
    if node.op_type == "ConvInteger":
        maps = (values.shapes.get(node.input[1]) or [None])[0]
        if _count(values, node, 2) != 1 or not _per_index(values, node, 3, maps):
            return "zero points must be one, or one per output channel for W"
        return None
    reason = _product_shapes(values, node.input[0], node.input[1])
    if reason:
        return reason
    columns = _last(values, node.input[1], -1) if _rank(values, node.input[1]) == 2 else None
    if _count(values, node, 2) != 1 or not _per_index(values, node, 3, columns):
        return "zero points must be one, or one per column of a 2-D B"
    return None


def qlinear_limit(node: onnx.NodeProto, values: Values) -> str | None:
    """QLinearMatMul and QLinearConv: float32 scales, one each but per column of a 2-D B or per output channel of W;
    one zero point each, or per column / channel for B or W."""
    if any(values.types.get(node.input[i]) != "float32" for i in (1, 4, 6)):
        return "float32 scales only"
    if node.op_type == "QLinearConv":
        if spatial_1d_2d(node, values):
            return spatial_1d_2d(node, values)
        channels = (values.shapes.get(node.input[3]) or [0])[0]
    else:
        reason = _product_shapes(values, node.input[0], node.input[3])
        if reason:
            return reason
        channels = _last(values, node.input[3], -1) if _rank(values, node.input[3]) == 2 else None
    if any(_count(values, node, i) != 1 for i in (1, 2, 6, 7)) or \
            not _per_index(values, node, 4, channels) or not _per_index(values, node, 5, channels):
        return "scales and zero points must be one, or one per column / output channel for B or W"
    return None


def dft_not_full_inverse(node: onnx.NodeProto, values: Values) -> str | None:
    """DFT: the full (two-sided) inverse is refused: onnx's cases expect float32 round-off (2e-7 in outputs that are
    exactly 0) that an exact transform does not reproduce within their tolerance."""
    inverse, onesided = attribute(node, "inverse", 0), attribute(node, "onesided", 0)
    return "a two-sided inverse DFT is not supported" if inverse and not onesided else None


LIMITS: dict[str, Limit] = {
    "single_output": single_output, "spatial_1d_2d": spatial_1d_2d, "einsum_limit": einsum_limit,
    "training_off": training_off, "recurrent_limit": recurrent_limit, "resize_limit": resize_limit,
    "resize_gpu_limit": resize_gpu_limit, "grid_sample_limit": grid_sample_limit,
    "first_input_f32": input_types({0: SETS["f32"]}), "first_input_float": input_types({0: SETS["wide_floats"]}),
    "numeric_operands": input_types({0: SETS["wide_numbers"], 1: SETS["wide_numbers"]}),
    "index_indices": input_types({1: SETS["index"]}),
    "dequantize_types": input_types({0: SETS["quantized"], 1: SETS["scales"]}), "dequantize_limit": dequantize_limit,
    "quantize_limit": quantize_limit, "integer_product_limit": integer_product_limit, "qlinear_limit": qlinear_limit,
    "nms_thresholds_given": nms_thresholds_given,
    "real_or_complex_signal": real_or_complex_signal,
    "dft_not_full_inverse": dft_not_full_inverse,
    "pool_spatial": pool_spatial, "max_pool_input": input_types({0: frozenset({"float32", "int8", "uint8"})}),
}
"""The limits ops.toml names; `constants:1,2` is made by `constants(1, 2)`, `weights:1,2` by `weights(1, 2)`."""


def weights(*indices: int) -> Limit:
    """The inputs at `indices`, when present, must be constants of the model (weights, Constant outputs)."""

    def limit(node: onnx.NodeProto, values: Values) -> str | None:
        for i in indices:
            if i < len(node.input) and node.input[i] and node.input[i] not in values.constants:
                return f"input {i} ({node.input[i]!r}) must be a constant of the model"
        return None

    return limit


def limit_named(name: str) -> Limit:
    for prefix, make in (("constants:", constants), ("weights:", weights)):
        if name.startswith(prefix):
            return make(*(int(i) for i in name.removeprefix(prefix).split(",")))
    return LIMITS[name]


def claim_of(onnx_op: str, claim: Claim) -> OpClaim:
    limits = [limit_named(name) for name in claim.limits]
    return OpClaim(onnx_op, dtypes=claim.dtypes, limit=every(*limits) if limits else None)


CLAIMS = [claim_of(onnx_op, claim) for claim, _ in contract().claims() for onnx_op in claim.onnx]
"""What the plan ops of the op contract serve (ops.toml), and what the lowering folds or turns into weights."""
