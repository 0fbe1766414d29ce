"""Sample models built with `--profile raspberry-pi`, cross-compiled and run under qemu-aarch64, once per test run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples
from edgepack.runtime import Session
from edgepack.targets.embedded.example_run import Library, build_example, read_library, run_example
from tests.output_error import relative_error  # noqa: F401  (re-exported to the tests here)
from tests.small_feeds import small_feeds

TOLERANCE = 1e-4
"""Max abs diff allowed against `reference`, relative to the output's scale: max(1, max |reference output|)."""


@dataclass
class LibraryBuilds:
    """Bundles and example binaries under `root`, built on first use."""

    root: Path
    bundles: dict[str, Path] = field(default_factory=dict)
    binaries: dict[str, Path] = field(default_factory=dict)

    def bundle(self, name: str) -> Path:
        """The raspberry-pi bundle of sample `name`, at its feeds' shapes. The build's verify is left out: the tests
        here run the library itself under qemu against `reference`, which is what verify would do once more."""
        if name not in self.bundles:
            feeds = self.feeds(name)
            result = edgepack.build(samples.path(name), profile="raspberry-pi", output_dir=self.root / "dist",
                                    input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                                    verify=False)
            self.bundles[name] = result.bundle_dir
        return self.bundles[name]

    def library(self, name: str) -> Library:
        return read_library(self.bundle(name))

    def binary(self, name: str) -> Path:
        """The bundle's example, cross-compiled with its Makefile."""
        if name not in self.binaries:
            self.binaries[name] = build_example(self.library(name), self.root / "build" / name)
        return self.binaries[name]

    def outputs(self, name: str) -> dict[str, np.ndarray]:
        """The example's outputs under qemu-aarch64 on the sample's feeds."""
        return run_example(self.library(name), self.binary(name), self.feeds(name)).outputs

    def reference(self, name: str) -> dict[str, np.ndarray]:
        """`reference` on the bundle's own graph (the same int8 weights), on the sample's feeds."""
        return Session(self.bundle(name), providers=["reference"]).run(self.feeds(name))

    @staticmethod
    def feeds(name: str) -> dict[str, np.ndarray]:
        return small_feeds(name)
