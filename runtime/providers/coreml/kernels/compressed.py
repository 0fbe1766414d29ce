"""The constexpr ops of compressed weights (coremltools.optimize), decompressed with coremltools' own routines:
their bit packing and scale layout are coremltools' to define."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernel


@kernel("constexpr_affine_dequantize")
def affine_dequantize(args: dict[str, Any]) -> np.ndarray:
    from coremltools.converters.mil.mil.ops.defs.iOS16.constexpr_ops import constexpr_affine_dequantize

    return constexpr_affine_dequantize.decompress(np.asarray(args["quantized_data"]), np.asarray(args["zero_point"]),
                                                  np.asarray(args["scale"]), int(args["axis"]))


@kernel("constexpr_lut_to_dense")
def lut_to_dense(args: dict[str, Any]) -> np.ndarray:
    from coremltools.converters.mil.mil.ops.defs.iOS16.constexpr_ops import constexpr_lut_to_dense

    return constexpr_lut_to_dense.decompress(np.asarray(args["lut"]), np.asarray(args["indices"]),
                                             np.asarray(args["shape"]))


@kernel("constexpr_cast")
def constexpr_cast(args: dict[str, Any]) -> np.ndarray:
    return np.asarray(args["source_val"])
