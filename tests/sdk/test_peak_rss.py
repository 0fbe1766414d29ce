"""PeakRSS: the peak resident memory over a stretch of code, reset per stretch where Linux allows it."""

from __future__ import annotations

import numpy as np

from edgepack.peak_rss import PeakRSS


def test_a_stretch_that_allocates_raises_the_peak_and_the_next_one_starts_afresh() -> None:
    with PeakRSS() as big:
        block = np.ones(200 * 2**20 // 8)  # 200 MB, touched
        del block
    assert big.method in ("VmHWM", "ru_maxrss")
    assert big.peak_mb - big.start_mb > 150 or big.method == "ru_maxrss" and big.peak_mb > 150
    with PeakRSS() as small:
        np.ones(1000).sum()
    assert small.peak_mb >= small.start_mb > 0
    if small.method == "VmHWM":  # the high-water mark was reset: the 200 MB block is not counted again
        assert small.peak_mb - small.start_mb < 150
