"""Sample feeds at the size tests run them: PP-OCR det's 640x640 page cropped to its top-left 320x320 quarter (text
included), which runs the same kernels and graph in a quarter of the time (minutes less under qemu, on SwiftShader's
WebGPU and on the numpy reference). Tests whose check does not depend on the page size build and run at these."""

from __future__ import annotations

import numpy as np

from edgepack import samples

CROPS = {"ppocr-det": (slice(None), slice(None), slice(0, 320), slice(0, 320))}


def small_feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """The sample's feeds, cropped where CROPS says."""
    crop = CROPS.get(name)
    feeds = samples.feeds(name, seed)
    return {key: np.ascontiguousarray(value[crop]) for key, value in feeds.items()} if crop else feeds


def small_shapes(name: str) -> dict[str, tuple[int, ...]] | None:
    """Input shapes to pin for a build at the cropped size (None where the sample is not cropped)."""
    return {key: value.shape for key, value in small_feeds(name).items()} if name in CROPS else None
