"""Mixed precision: when a quantized build misses the profile's fidelity, keep its most sensitive nodes in fp32,
doubling how many until the tolerance holds or every node is kept."""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from edgepack.packager.profile import Profile
from edgepack.packager.quantize import QuantizeResult
from edgepack.packager.quantize.sensitivity import rank_nodes

from .model_runner import profile_runner
from .verify import Oracle


def sensitivity_order(source: onnx.ModelProto, quantized: QuantizeResult, oracle: Oracle, profile: Profile
                      ) -> list[str]:
    """The quantized nodes, most sensitive first: each ranked by the relative error it adds over its inputs' error,
    measured on the profile's first provider at full precision."""
    return rank_nodes(source, quantized.model, quantized.nodes, oracle.samples, profile_runner(profile))


def doubling(order: list[str]) -> Iterator[list[str]]:
    """The nodes to keep in fp32 at each attempt: the first 1, 2, 4, ... of `order`, ending with all of them."""
    kept: list[str] = []
    while len(kept) < len(order):
        kept = order[:max(1, 2 * len(kept))]
        yield kept
