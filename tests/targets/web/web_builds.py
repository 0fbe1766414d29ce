"""Sample models built with `--profile web` once per test run, and the Chromium that runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples

TOLERANCE = 1e-3
"""Max abs diff allowed against `reference`, relative to the output's scale: max(1, max |reference output|)."""


def relative_error(expected: np.ndarray, actual: np.ndarray) -> float:
    expected = np.asarray(expected, dtype=np.float64)
    if expected.size == 0:
        return 0.0
    return float(np.abs(expected - np.asarray(actual, dtype=np.float64)).max() / max(1.0, np.abs(expected).max()))


@dataclass
class WebBuilds:
    """Web bundles under `root` (the folder Chromium serves), built on first use at their feeds' shapes."""

    root: Path
    bundles: dict[tuple[str, str], Path] = field(default_factory=dict)

    def bundle(self, name: str, weights: str = "fp32") -> Path:
        """The web bundle of sample `name`; fp32 weights by default, so outputs compare with the fp32 source at
        the kernels' precision (the profile's fp16 weights are tested on their own)."""
        key = (name, weights)
        if key not in self.bundles:
            feeds = samples.feeds(name)
            result = edgepack.build(samples.path(name), profile="web", output_dir=self.root / weights,
                                    input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                                    weights=weights)
            self.bundles[key] = result.bundle_dir
        return self.bundles[key]

    def path_in_root(self, bundle: Path, file: str = "") -> str:
        """The URL path of a file of `bundle` under the served root."""
        return (bundle / file).relative_to(self.root).as_posix()
