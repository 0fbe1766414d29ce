"""Mixed precision: when a lowered build misses the profile's fidelity, keep its most sensitive nodes in fp32,
doubling how many until the tolerance holds or every node is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx

from edgepack.packager.quantize import QuantizeResult
from edgepack.packager.quantize.sensitivity import rank_nodes

from .profile import Profile
from .verify import Oracle, profile_runner

Attempt = Callable[[list[str]], dict[str, Any]]
"""Rebuilds the bundle with the given nodes kept in fp32 and returns its fidelity."""


def keep_sensitive_in_float(reference: onnx.ModelProto, lowered: QuantizeResult, oracle: Oracle, profile: Profile,
                            attempt: Attempt) -> tuple[list[str], dict[str, Any]]:
    """The nodes kept in fp32 (most sensitive first) and the fidelity of the last attempt."""
    ranking = rank_nodes(reference, lowered.model, lowered.nodes, oracle.samples, profile_runner(profile))
    kept: list[str] = []
    fidelity: dict[str, Any] = {"passed": False}
    while not fidelity["passed"] and len(kept) < len(ranking):
        kept = ranking[:max(1, 2 * len(kept))]
        fidelity = attempt(kept)
    return kept, fidelity
