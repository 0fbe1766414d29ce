"""Sample models built with `--profile web` once per test run, and the Chromium that runs them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples
from edgepack.runtime import Session
from tests.output_error import relative_error  # noqa: F401  (re-exported to the tests here)
from tests.small_feeds import small_feeds

TOLERANCE = 1e-3
"""Max abs diff allowed against `reference`, relative to the output's scale: max(1, max |reference output|)."""


@dataclass
class WebBuilds:
    """Web bundles under `root` (the folder Chromium serves), built on first use at their feeds' shapes."""

    root: Path
    bundles: dict[tuple[str, str], Path] = field(default_factory=dict)
    expected: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    @staticmethod
    def feeds(name: str) -> dict[str, np.ndarray]:
        return small_feeds(name)

    def reference(self, name: str) -> dict[str, np.ndarray]:
        """The fp32 source's outputs on `feeds(name)`, on the `reference` provider."""
        if name not in self.expected:
            self.expected[name] = Session(samples.path(name), providers=["reference"]).run(self.feeds(name))
        return self.expected[name]

    def bundle(self, name: str, weights: str = "fp32") -> Path:
        """The web bundle of sample `name`; fp32 weights by default, so outputs compare with the fp32 source at
        the kernels' precision (the profile's fp16 weights are tested on their own)."""
        key = (name, weights)
        if key not in self.bundles:
            feeds = self.feeds(name)
            result = edgepack.build(samples.path(name), profile="web", output_dir=self.root / weights,
                                    input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                                    weights=weights)
            self.bundles[key] = result.bundle_dir
        return self.bundles[key]

    def path_in_root(self, bundle: Path, file: str = "") -> str:
        """The URL path of a file of `bundle` under the served root."""
        return (bundle / file).relative_to(self.root).as_posix()
