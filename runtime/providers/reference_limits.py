"""Where the `reference` provider does not claim an op, or claims it only in part, and why. Each entry answers a
failure of the onnx node-test conformance suite (`tests/runtime/conformance/`), or an op onnx's evaluator lacks."""

from __future__ import annotations

from typing import Any

import onnx

from ..capability import MAX_OPSET, Values

RANDOM = "draws random numbers: its values cannot match another runtime's generator"

NOT_CLAIMED: dict[str, str] = {
    "Bernoulli": RANDOM,
    "RandomUniform": RANDOM,
    "RandomUniformLike": RANDOM,
    "RandomNormal": RANDOM,
    "RandomNormalLike": RANDOM,
    "Multinomial": RANDOM,
    "ImageDecoder": "onnx's kernel needs Pillow, which edgepack does not depend on",
    "Scatter": "deprecated since opset 11 and not implemented by onnx's ReferenceEvaluator (ScatterElements is)",
    **dict.fromkeys(("ZipMap", "CastMap", "CategoryMapper"),
                    "an ai.onnx.ml op over maps or strings that onnx's ReferenceEvaluator does not implement"),
}


def _no_optional_values(node: onnx.NodeProto, values: Values) -> str | None:
    """onnx's If and Loop kernels mishandle optional-typed values (test_if_opt, test_loop16_seq_none)."""
    if any(values.types.get(name) == "optional" for name in [*node.input, *node.output]):
        return "optional-typed inputs and outputs are not supported"
    return None


LIMITS: dict[str, dict[str, Any]] = {
    "If": {"limit": _no_optional_values},
    "Loop": {"limit": _no_optional_values},
    "Scan": {"opsets": (9, MAX_OPSET)},  # opset 8's Scan has a batch axis that onnx's kernel does not implement
}
