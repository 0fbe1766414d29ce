"""Activation ranges from calibration samples, checked against numpy over the concatenated samples: minmax exact,
percentile within 1% of the data's range (histogram resolution), entropy between the bulk and the outliers; and the
scale and zero point a range gives."""

from __future__ import annotations

import numpy as np
import pytest

from edgepack.packager.quantize.ranges import (
    CALIBRATION_METHODS,
    RangeCollector,
    covering_scale_zero_point,
    scale_zero_point,
)

PERCENTILE_TOLERANCE = 0.01
"""Percentile ranges match np.percentile within this fraction of max - min of all values."""


def collected(method: str, batches: list[np.ndarray], **options: float) -> tuple[float, float]:
    collector = RangeCollector(method, **options)
    for batch in batches:
        collector.add("x", batch)
    return collector.ranges()["x"]


def gaussian(count: int, seed: int, sigma: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [sigma * rng.standard_normal(size).astype(np.float32) for size in (count, count, count, count)]


def test_minmax_is_the_extremes_of_every_sample() -> None:
    rng = np.random.default_rng(0)
    batches = [rng.normal(loc, scale, shape) for loc, scale, shape in [(0, 1, (8, 16)), (3, 2, (5,)), (-1, 4, (2, 3))]]
    everything = np.concatenate([b.ravel() for b in batches])
    assert collected("minmax", batches) == (np.min(everything), np.max(everything))


def test_a_range_always_holds_zero() -> None:
    positive = [np.array([2.0, 5.0]), np.array([3.0])]
    assert collected("minmax", positive) == (0.0, 5.0)
    assert collected("minmax", [-p for p in positive]) == (-5.0, 0.0)


@pytest.mark.parametrize("method", CALIBRATION_METHODS)
def test_nan_and_inf_are_ignored(method: str) -> None:
    batches = gaussian(20_000, seed=1)
    spoiled = [np.concatenate([b, [np.nan, np.inf, -np.inf]]) for b in batches]
    assert collected(method, spoiled) == pytest.approx(collected(method, batches), rel=1e-12)


@pytest.mark.parametrize("percentile", [99.99, 99.0, 90.0])
def test_percentile_over_split_samples_matches_numpy(percentile: float) -> None:
    batches = gaussian(50_000, seed=2)
    everything = np.concatenate(batches)
    low, high = collected("percentile", batches, percentile=percentile)
    tolerance = PERCENTILE_TOLERANCE * float(everything.max() - everything.min())
    assert low == pytest.approx(np.percentile(everything, 100 - percentile), abs=tolerance)
    assert high == pytest.approx(np.percentile(everything, percentile), abs=tolerance)


def test_percentile_ignores_a_few_huge_outliers_that_minmax_keeps() -> None:
    batches = [*gaussian(50_000, seed=3), np.array([1e4, -1e4, 2e4], dtype=np.float32)]
    assert collected("minmax", batches) == (-1e4, 2e4)
    low, high = collected("percentile", batches, percentile=99.99)
    assert -100 < low < -2 and 2 < high < 100


@pytest.mark.parametrize("batches", [
    [np.random.default_rng(4).uniform(0, 1, 20_000), np.random.default_rng(5).normal(0, 100, 20_000)],
    [np.random.default_rng(6).uniform(1, 2, 20_000), np.random.default_rng(7).uniform(-50, -10, 20_000)],
    [np.zeros(100), np.random.default_rng(8).normal(3, 0.5, 20_000), np.random.default_rng(9).normal(0, 1e3, 5)],
], ids=["narrow-then-wide", "positive-then-negative", "zeros-then-two-widenings"])
def test_percentile_after_rebinning_matches_numpy(batches: list[np.ndarray]) -> None:
    everything = np.concatenate(batches)
    low, high = collected("percentile", batches, percentile=99.0)
    tolerance = PERCENTILE_TOLERANCE * float(everything.max() - everything.min())
    assert low == pytest.approx(min(0.0, np.percentile(everything, 1.0)), abs=tolerance)
    assert high == pytest.approx(max(0.0, np.percentile(everything, 99.0)), abs=tolerance)


def test_entropy_clips_huge_outliers_but_not_the_bulk() -> None:
    sigma, outlier = 1.0, 1000.0
    batches = [*gaussian(50_000, seed=10, sigma=sigma), np.array([outlier, -outlier, 0.9 * outlier])]
    low, high = collected("entropy", batches)
    assert low == -high
    assert 2 * sigma < high < outlier / 10


def test_entropy_on_uniform_data_keeps_nearly_all_of_it() -> None:
    rng = np.random.default_rng(11)
    batches = [rng.uniform(-1, 1, 50_000) for _ in range(3)]
    peak = max(np.abs(b).max() for b in batches)
    low, high = collected("entropy", batches)
    assert low == -high
    assert 0.95 * peak <= high <= peak


def test_entropy_of_non_negative_data_starts_at_zero() -> None:
    batches = [np.maximum(b, 0.0) for b in gaussian(50_000, seed=12)]
    low, high = collected("entropy", batches)
    assert low == 0.0
    assert 0.0 < high <= max(b.max() for b in batches)


def quantize(x: float, scale: float, zero_point: int, symmetric: bool) -> int:
    low, high = (-127, 127) if symmetric else (0, 255)
    return int(np.clip(np.rint(x / scale) + zero_point, low, high))


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("low, high", [(-1.0, 3.0), (0.0, 5.0), (-2.0, 0.0), (-0.3, 0.7), (-1e-3, 250.0)])
def test_scale_zero_point_keeps_zero_exact_and_the_ends_within_a_scale(low: float, high: float,
                                                                       symmetric: bool) -> None:
    scale, zero_point = scale_zero_point(low, high, symmetric)
    assert scale > 0 and isinstance(zero_point, int)
    if symmetric:
        assert zero_point == 0
        assert scale == pytest.approx(max(abs(low), abs(high)) / 127, rel=1e-12)
    else:
        assert 0 <= zero_point <= 255
        assert scale == pytest.approx((high - low) / 255, rel=1e-12)
    assert (quantize(0.0, scale, zero_point, symmetric) - zero_point) * scale == 0.0
    for end in (low, high):
        assert abs((quantize(end, scale, zero_point, symmetric) - zero_point) * scale - end) <= scale


def test_an_unknown_method_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError) as raised:
        RangeCollector("kl-divergence")
    assert "kl-divergence" in str(raised.value)
    assert all(method in str(raised.value) for method in CALIBRATION_METHODS)


@pytest.mark.parametrize("method", CALIBRATION_METHODS)
@pytest.mark.parametrize("batch", [np.zeros((4, 8), dtype=np.float32), np.array([np.nan, np.inf])],
                         ids=["zeros", "no-finite-value"])
def test_a_tensor_without_spread_still_gets_a_nonzero_scale(method: str, batch: np.ndarray) -> None:
    low, high = collected(method, [batch, batch])
    assert low <= 0.0 < high
    for symmetric in (False, True):
        scale, zero_point = scale_zero_point(low, high, symmetric)
        assert scale > 0
        assert (quantize(0.0, scale, zero_point, symmetric) - zero_point) * scale == 0.0
    assert scale_zero_point(0.0, 0.0, symmetric=False)[0] > 0
    assert scale_zero_point(0.0, 0.0, symmetric=True)[0] > 0


def test_entropy_keeps_data_with_a_gap_at_zero() -> None:
    """An image's pixels (normalized, none near 0): the threshold must not stop at the gap, clipping them all."""
    rng = np.random.default_rng(13)
    batches = [np.concatenate([rng.uniform(1.8, 2.2, 40_000), rng.uniform(-1.9, -0.8, 10_000)]) for _ in range(3)]
    low, high = collected("entropy", batches)
    everything = np.abs(np.concatenate(batches))
    assert np.mean(everything > high) <= 0.01
    assert high <= everything.max()


@pytest.mark.parametrize(("low", "high"), [(-3.0, 17.3), (-2.5, 2.5), (0.0, 6.0), (-0.001, 40.0), (-7.0, 1e-3)])
def test_a_covering_grid_reaches_past_both_ends(low: float, high: float) -> None:
    scale, zero_point = covering_scale_zero_point(low, high)
    assert 0 <= zero_point <= 255
    assert low - scale < -zero_point * scale <= low
    assert high <= (255 - zero_point) * scale < high + 2 * scale
