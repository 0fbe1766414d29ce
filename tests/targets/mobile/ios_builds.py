"""Sample models built with `--profile iphone` once per test session, at their sample feeds' shapes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples
from tests.small_feeds import small_feeds


@dataclass
class IosBuilds:
    root: Path
    bundles: dict[tuple[str, str], Path] = field(default_factory=dict)

    @staticmethod
    def feeds(name: str) -> dict[str, np.ndarray]:
        return small_feeds(name)

    def bundle(self, name: str, weights: str = "fp16") -> Path:
        key = (name, weights)
        if key not in self.bundles:
            feeds = self.feeds(name)
            result = edgepack.build(samples.path(name), profile="iphone", output_dir=self.root / weights,
                                    input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                                    weights=weights, accept_fidelity_loss=weights != "fp16")
            self.bundles[key] = result.bundle_dir
        return self.bundles[key]
