"""Weight compression of a CoreML model with coremltools.optimize, from the profile's weight precision."""

from __future__ import annotations

from typing import Any

from edgepack.runtime.errors import EdgepackError

from .mil import coremltools

PALETTES = {"palette4": 4, "palette6": 6, "palette8": 8}
"""Lookup-table weights: each tensor's values become 2**N k-means centroids and N-bit indices."""
WEIGHT_PRECISIONS = ("fp32", "fp16", "int8", *PALETTES)
SMALLEST_COMPRESSED = 2048
"""Weights with fewer elements stay as they are (biases, norms): compressing them saves nothing and costs accuracy."""


def compress(mlmodel: Any, weights: str) -> Any:
    """`mlmodel` with its weights as `weights`: fp16/fp32 as converted (the compute precision stores them), int8 as
    linear symmetric per-channel quantization, paletteN as an N-bit k-means lookup table per tensor."""
    if weights not in WEIGHT_PRECISIONS:
        raise EdgepackError(f"CoreML weights {weights!r} are not one of {', '.join(WEIGHT_PRECISIONS)}",
                            where="coreml provider", fix="use the profile's [precision] weights")
    if weights in ("fp32", "fp16"):
        return mlmodel
    coremltools()
    from coremltools.optimize import coreml as optimize

    if weights == "int8":
        op = optimize.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", granularity="per_channel",
                                              weight_threshold=SMALLEST_COMPRESSED)
        return optimize.linear_quantize_weights(mlmodel, optimize.OptimizationConfig(global_config=op))
    op = optimize.OpPalettizerConfig(mode="kmeans", nbits=PALETTES[weights], weight_threshold=SMALLEST_COMPRESSED)
    return optimize.palettize_weights(mlmodel, optimize.OptimizationConfig(global_config=op))
