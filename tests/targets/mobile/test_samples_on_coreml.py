"""PP-OCR det, rec and cls build for `--profile iphone` wholly on CoreML, and the saved programs (float16 compute,
evaluated with numpy here) reach the profile's fidelity against the fp32 source on the samples' real images."""

from __future__ import annotations

import json

import pytest

from edgepack import samples
from edgepack.runtime import Session
from tests.output_error import relative_error

from .ios_builds import IosBuilds

FP16_TOLERANCE = 5e-2
"""Max abs diff relative to max(1, |reference|) after some 100 float16 ops in a row."""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppocr-det", "ppocr-rec", "ppocr-cls"])
def test_ppocr_is_wholly_on_coreml(ios_builds: IosBuilds, name: str) -> None:
    bundle = ios_builds.bundle(name)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [p["provider"] for p in manifest["partitions"]] == ["coreml"]
    assert manifest["fidelity"]["passed"]
    assert min(o["cosine"] for o in manifest["fidelity"]["outputs"].values()) >= 0.999
    feeds = ios_builds.feeds(name)
    expected = Session(samples.path(name), providers=["reference"]).run(feeds)
    actual = Session(bundle).run(feeds)
    for output, reference in expected.items():
        assert relative_error(reference, actual[output]) < FP16_TOLERANCE, output
