"""The ops the `cpu` provider claims (read from the op contract, ops.toml), with the element types and limits its
lowering and kernels cover. Shapes are fixed when a plan is lowered, so inputs that shape an output (Reshape's shape,
Slice's starts, Pad's pads, ...) must be known then: constants, values computed from shapes, or model inputs (a plan
per value); the conformance suite checks every claim."""

from __future__ import annotations

from collections.abc import Callable

import onnx

from ..capability import OpClaim, Values, attribute
from ..native.op_contract import Claim, contract

Limit = Callable[[onnx.NodeProto, Values], str | None]

F32 = frozenset({"float32"})
INDEX = frozenset({"int32", "int64"})
NUMBERS = frozenset({"float32", "int32", "int64"})
HELD = frozenset({"float32", "int32", "int64", "int8", "uint8", "bool"})
QUANTIZED = frozenset({"int8", "int4"})
WIDE_FLOATS = frozenset({"float32", "float64", "float16", "bfloat16"})
WIDE_NUMBERS = WIDE_FLOATS | {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"}
SCALES = frozenset({"float32", "float16"})


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


LIMITS: dict[str, Limit] = {
    "single_output": single_output, "spatial_1d_2d": spatial_1d_2d, "einsum_limit": einsum_limit,
    "training_off": training_off, "recurrent_limit": recurrent_limit, "resize_limit": resize_limit,
    "first_input_f32": input_types({0: F32}), "first_input_float": input_types({0: WIDE_FLOATS}),
    "numeric_operands": input_types({0: WIDE_NUMBERS, 1: WIDE_NUMBERS}), "index_indices": input_types({1: INDEX}),
    "dequantize_types": input_types({0: QUANTIZED, 1: SCALES}),
    "nms_thresholds_given": nms_thresholds_given,
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
