"""Activation ranges for static int8 quantization, estimated from calibration runs, and the scale and zero point
a range gives.

Three methods: `minmax` (the extremes seen), `percentile` (the tails cut at a percentile, low and high separately)
and `entropy` (the symmetric threshold, clipping at most 1% of values, whose 128-level quantization keeps the
|value| histogram closest in KL divergence). Memory per tensor is fixed whatever the number of samples: extremes,
plus for the last two a histogram of `bins` equal bins whose width doubles when a later sample falls outside it.

Every range holds 0 (so it is exact after quantization) and spans at least `MIN_SPAN`: a tensor that was all zero
(or had no finite value) gives (0.0, MIN_SPAN), so no scale is ever 0. NaN and infinities are ignored."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CALIBRATION_METHODS = ("minmax", "percentile", "entropy")

MIN_SPAN = 1e-6
"""The least high - low of a range; narrower ones (an all-zero tensor) are widened upward to it. Float activations
that small are in effect zero, and a uint8 scale of MIN_SPAN / 255 keeps requantization multipliers sane."""

QUANTIZED_BINS = 128
"""Levels on one side of an int8 range: the entropy search merges a candidate's histogram into this many bins, for
non-negative tensors too (whose (0, t) range may still be quantized symmetrically)."""

SMOOTHING = 1e-4
"""The probability each empty bin gets before the KL divergence is taken (at most half the mass in all), taken from
the filled bins in proportion."""

MAX_CLIPPED = 0.01
"""The most of a tensor's values an entropy threshold may clip. KL divergence alone is blind to a gap: with no |value|
near 0 (an image's pixels, a biased feature), a threshold at the gap's edge keeps one filled bin, whose 128-level
merge is itself, and scores a divergence of 0 while clipping everything."""

CHUNK = 256
"""Entropy candidates whose divergences are computed at once (each takes a row of `bins` floats per array)."""


class _Histogram:
    """Counts of values on a grid of equal bins anchored at 0 and always covering it; bin k of `counts` holds
    [(start + k) * width, (start + k + 1) * width). A sample outside the grid doubles the width (merging bins in
    pairs, exactly) until everything fits."""

    def __init__(self, bins: int) -> None:
        self.counts = np.zeros(bins)
        self.width = 0.0
        self.start = 0
        self.low = 0.0
        self.high = 0.0

    def add(self, values: np.ndarray) -> None:
        bins = len(self.counts)
        self.low, self.high = min(self.low, float(values.min())), max(self.high, float(values.max()))
        if self.width == 0.0:
            self.width = max(self.high - self.low, MIN_SPAN) / (bins - 2)
        factor = 1
        while math.floor(self.high / (self.width * factor)) - math.floor(self.low / (self.width * factor)) >= bins:
            factor *= 2
        start = math.floor(self.low / (self.width * factor))
        filled = np.flatnonzero(self.counts)
        self.counts = np.bincount((self.start + filled) // factor - start, weights=self.counts[filled],
                                  minlength=bins)
        self.width, self.start = self.width * factor, start
        self.counts += np.bincount(np.floor(values / self.width).astype(np.int64) - start, minlength=bins)

    def quantile(self, fraction: float) -> float:
        """The value below which `fraction` of the counts lie, interpolated linearly within its bin."""
        cumulative = np.concatenate([[0.0], np.cumsum(self.counts)])
        edges = (self.start + np.arange(len(cumulative))) * self.width
        return float(np.interp(fraction * cumulative[-1], cumulative, edges))


@dataclass
class _Seen:
    """What one tensor's calibration samples left: its finite extremes and, for histogram methods, the histogram."""

    histogram: _Histogram | None
    low: float = math.inf
    high: float = -math.inf


class RangeCollector:
    """Collects each tensor's values over calibration runs and gives its quantization range.

    `percentile` is asymmetric: low is the (100 - percentile)-th percentile and high the percentile-th, each within
    a histogram bin, at most about 2 * (max - min) / bins wide (0 counted in). `entropy` gives (-t, t), or (0, t)
    for a tensor never negative."""

    def __init__(self, method: str = "minmax", percentile: float = 99.99, bins: int = 2048) -> None:
        if method not in CALIBRATION_METHODS:
            raise ValueError(f"unknown calibration method {method!r}: expected one of {', '.join(CALIBRATION_METHODS)}")
        if not 50.0 < percentile <= 100.0:
            raise ValueError(f"percentile must be above 50 and at most 100, not {percentile}")
        if bins <= QUANTIZED_BINS:
            raise ValueError(f"bins must be more than {QUANTIZED_BINS}, not {bins}")
        self.method, self.percentile, self.bins = method, percentile, bins
        self._seen: dict[str, _Seen] = {}

    def add(self, name: str, values: np.ndarray) -> None:
        """Takes tensor `name`'s values from one calibration sample."""
        seen = self._seen.setdefault(name, _Seen(None if self.method == "minmax" else _Histogram(self.bins)))
        flat = np.asarray(values, dtype=np.float64).ravel()
        finite = flat[np.isfinite(flat)]
        if finite.size == 0:
            return
        seen.low, seen.high = min(seen.low, float(finite.min())), max(seen.high, float(finite.max()))
        if seen.histogram is not None:
            seen.histogram.add(np.abs(finite) if self.method == "entropy" else finite)

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Each tensor's (low, high), low <= 0 <= high and high - low >= MIN_SPAN."""
        return {name: _widen(*self._range(seen)) for name, seen in self._seen.items()}

    def _range(self, seen: _Seen) -> tuple[float, float]:
        if seen.low > seen.high:
            return 0.0, 0.0
        if seen.histogram is None:
            return seen.low, seen.high
        if self.method == "percentile":
            tail = 1.0 - self.percentile / 100.0
            return (max(seen.low, seen.histogram.quantile(tail)), min(seen.high, seen.histogram.quantile(1.0 - tail)))
        threshold = _entropy_threshold(seen.histogram, max(-seen.low, seen.high))
        return (0.0 if seen.low >= 0.0 else -threshold), threshold


def scale_zero_point(low: float, high: float, symmetric: bool) -> tuple[float, int]:
    """The scale and zero point of int8 symmetric (zero point 0, scale max(|low|, |high|) / 127) or uint8 (zero point
    in [0, 255]) quantization of [low, high], first widened as ranges are (holding 0, at least MIN_SPAN wide)."""
    low, high = _widen(low, high)
    if symmetric:
        return max(-low, high) / 127.0, 0
    scale = (high - low) / 255.0
    return scale, round(-low / scale)


def covering_scale_zero_point(low: float, high: float) -> tuple[float, int]:
    """uint8 scale and zero point whose grid reaches past both ends of [low, high] (low <= 0 < high): for a range
    clipped where its readers saturate, whose clipped values must dequantize at or beyond the bound. It spends one
    of the 255 steps on that."""
    scale = (float(high) - float(low)) / 254.0
    return scale, min(255, math.ceil(-float(low) / scale))


def _widen(low: float, high: float) -> tuple[float, float]:
    """[low, high] stretched to hold 0 and, by raising high, to span at least MIN_SPAN."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    return low, max(high, low + MIN_SPAN)


def _entropy_threshold(histogram: _Histogram, peak: float) -> float:
    """The |value| threshold, from 128 bins (and the 99th percentile) up to `peak`, whose clipped histogram merged
    into 128 levels is closest in KL divergence to the histogram with everything beyond the threshold folded into its
    last bin."""
    counts = histogram.counts[:np.flatnonzero(histogram.counts)[-1] + 1]
    if len(counts) <= QUANTIZED_BINS:
        return peak
    least_end = int(np.searchsorted(np.cumsum(counts), (1.0 - MAX_CLIPPED) * counts.sum())) + 1
    ends = np.arange(max(QUANTIZED_BINS, least_end), len(counts) + 1)
    divergences = np.concatenate([_divergences(counts, ends[first:first + CHUNK])
                                  for first in range(0, len(ends), CHUNK)])
    return min(peak, float(ends[np.argmin(divergences)]) * histogram.width)


def _divergences(counts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """KL(P || Q) for each candidate keeping the first `end` bins of `counts`: P is those bins with the rest's
    counts added to the last; Q spreads each of 128 merged groups of the kept bins over its bins where P is not
    zero. Both are smoothed so that empty bins are not zero."""
    total = counts.sum()
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    kept = cumulative[ends]
    end = ends[:, None]
    index = np.arange(ends.max())[None, :]
    reference = np.where(index < end, counts[:ends.max()], 0.0) + (index == end - 1) * (total - kept)[:, None]
    filled = reference > 0
    starts = (np.arange(QUANTIZED_BINS + 1)[None, :] * end + QUANTIZED_BINS - 1) // QUANTIZED_BINS
    group_mass = np.diff(cumulative[starts], axis=1)
    filled_so_far = np.concatenate([np.zeros((len(ends), 1)), np.cumsum(filled, axis=1)], axis=1)
    group_filled = np.diff(np.take_along_axis(filled_so_far, starts, axis=1), axis=1)
    group = np.minimum(index * QUANTIZED_BINS // end, QUANTIZED_BINS - 1)
    per_bin = np.take_along_axis(group_mass / np.maximum(group_filled, 1.0), group, axis=1)
    expanded = np.where(filled, per_bin, 0.0)
    empty_mass = np.minimum(SMOOTHING, 0.5 / end)
    p = _smoothed(reference / total, filled, end, empty_mass)
    q = _smoothed(expanded / np.maximum(kept, 1.0)[:, None], expanded > 0, end, empty_mass)
    terms = np.where(filled, p * np.log(np.where(filled, p / q, 1.0)), 0.0)
    return np.where(kept > 0, terms.sum(axis=1), np.inf)


def _smoothed(probabilities: np.ndarray, filled: np.ndarray, end: np.ndarray, empty_mass: np.ndarray) -> np.ndarray:
    """Each row with `empty_mass` in each of its first `end` bins that is not `filled`, taken from those that are."""
    empty = end - filled.sum(axis=1, keepdims=True)
    return np.where(filled, probabilities * (1.0 - empty_mass * empty), empty_mass)
