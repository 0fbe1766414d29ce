"""Bring a model's ai.onnx opset into a profile's range with onnx's version converter."""

from __future__ import annotations

import onnx
from onnx import version_converter

from edgepack.runtime.errors import EdgepackError


def default_opset(model: onnx.ModelProto) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)


def convert_opset(model: onnx.ModelProto, low: int, high: int) -> tuple[onnx.ModelProto, str | None]:
    """The model at an opset within [low, high], and a note of the conversion made (None when none was). A model
    that imports no ai.onnx opset (a scikit-learn model of ai.onnx.ml ops only) has nothing to convert."""
    if not any(o.domain in ("", "ai.onnx") for o in model.opset_import):
        return model, None
    current = default_opset(model)
    wanted = min(max(current, low), high)
    if wanted == current:
        return model, None
    known = onnx.defs.onnx_opset_version()
    if current > known:
        raise EdgepackError(f"the model's opset {current} is newer than any this onnx knows ({known})",
                            fix=f"export the model at an opset from {low} to {high}, or upgrade onnx if a release "
                                f"knows opset {current}")
    try:
        converted = version_converter.convert_version(model, wanted)
        onnx.checker.check_model(converted)
    except Exception as exc:  # the converter raises bare RuntimeErrors and ValidationErrors
        raise EdgepackError(
            f"cannot convert the model from opset {current} to opset {wanted}: {str(exc).splitlines()[0]}",
            fix=f"export the model at an opset from {low} to {high}, or use a profile whose opset range "
                f"includes {current}") from None
    return converted, f"opset {current} -> {wanted}"
