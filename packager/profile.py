"""A device profile, as every stage reads it: target, providers in priority order, precision, shape pins, budgets,
fidelity tolerance. `edgepack.profile` reads and validates the TOML files it comes from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WEIGHT_PRECISIONS = ("fp32", "fp16", "int8", "int4", "palette4", "palette6", "palette8")
"""paletteN: N-bit lookup-table weights (k-means palettization), which CoreML builds apply with coremltools."""
ACTIVATION_PRECISIONS = ("fp32", "fp16", "int8")
MIN_OPSET, MAX_OPSET = 7, 23


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    target: str
    providers: tuple[str, ...]
    weights: str = "fp32"
    activations: str = "fp32"
    opset_min: int = MIN_OPSET
    opset_max: int = MAX_OPSET
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Shapes pinned per input name."""
    dims: dict[str, int] = field(default_factory=dict)
    """Symbolic dimensions pinned by name wherever they appear (e.g. batch = 1)."""
    bundle_mb: float | None = None
    peak_memory_mb: float | None = None
    min_cosine: float = 0.999
    min_cosine_int8: float = 0.99
    """The cosine asked of builds with int8 weights or activations, coarser than any float."""
    min_cosine_int4: float = 0.9
    """The cosine asked of builds with int4 weights."""
    max_abs_diff: float | None = None
    deployment_target: str = "iOS16"
    """The CoreML minimum deployment target (ios target)."""
    source: str = ""
    """Where the profile was read from: `builtin:NAME` or a file path."""

    def as_dict(self) -> dict[str, Any]:
        """The profile as it is written into a bundle manifest."""
        return {
            "name": self.name,
            "target": self.target,
            "providers": list(self.providers),
            "precision": {"weights": self.weights, "activations": self.activations},
            "opset": {"min": self.opset_min, "max": self.opset_max},
            "shapes": {"inputs": {k: list(v) for k, v in self.input_shapes.items()}, "dims": dict(self.dims)},
            "budgets": {"bundle_mb": self.bundle_mb, "peak_memory_mb": self.peak_memory_mb},
            "fidelity": {"min_cosine": self.min_cosine, "min_cosine_int8": self.min_cosine_int8,
                         "min_cosine_int4": self.min_cosine_int4, "max_abs_diff": self.max_abs_diff},
            "coreml": {"deployment_target": self.deployment_target},
        }

    @property
    def required_cosine(self) -> float:
        """The least cosine a build of this precision must reach: the key of its coarsest number format."""
        if self.weights in ("int4", "palette4"):
            return self.min_cosine_int4
        if "int8" in (self.weights, self.activations) or self.weights in ("palette6", "palette8"):
            return self.min_cosine_int8
        return self.min_cosine
