"""Synthetic images for vision samples: a detector fed noise sees nothing, so its outputs measure nothing."""

from __future__ import annotations

import numpy as np

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406])
IMAGENET_STD = np.array([0.229, 0.224, 0.225])


def text_page(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A (1, 3, H, W) float32 page of dark glyph-like strokes in lines on a light, slightly noisy background,
    normalized with the ImageNet mean and std as PP-OCR's preprocessing does."""
    _, channels, height, width = shape
    page = np.full((height, width), 235.0) + rng.normal(0.0, 6.0, (height, width))
    line_height = max(4, height // 24)
    for _ in range(int(rng.integers(8, 16))):
        glyph = int(rng.integers(line_height // 2, 2 * line_height))
        top = int(rng.integers(0, max(1, height - glyph)))
        x = int(rng.integers(0, max(1, width // 2)))
        end = min(width, x + int(rng.integers(width // 8, width * 5 // 8)))
        while x < end:
            stroke = int(rng.integers(2, max(3, glyph)))
            page[top:top + glyph, x:x + stroke] = rng.uniform(10.0, 80.0)
            x += stroke + int(rng.integers(2, max(3, glyph)))
    return _normalized(page, channels)


def text_line(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A (1, 3, H, W) float32 crop of one text line as PP-OCR's recognizer and direction classifier see it: glyph-like
    strokes of varying height along a baseline, upright or turned 180 degrees (even odds), normalized as
    `text_page`."""
    _, channels, height, width = shape
    line = np.full((height, width), 230.0) + rng.normal(0.0, 6.0, (height, width))
    baseline = int(height * rng.uniform(0.75, 0.85))
    x, end = int(rng.integers(0, width // 8)), int(width * rng.uniform(0.5, 1.0))
    while x < end:
        stroke = int(rng.integers(2, max(3, height // 6)))
        top = int(baseline - height * rng.choice([0.35, 0.5, 0.65]))
        bottom = baseline + (int(height * 0.12) if rng.random() < 0.2 else 0)
        line[max(0, top):bottom, x:x + stroke] = rng.uniform(10.0, 80.0)
        x += stroke + int(rng.integers(1, max(2, height // 5)))
    if rng.random() < 0.5:
        line = line[::-1, ::-1]
    return _normalized(line, channels)


def _normalized(gray: np.ndarray, channels: int) -> np.ndarray:
    rgb = np.repeat(gray.clip(0.0, 255.0)[None] / 255.0, channels, axis=0)
    normalized = (rgb - IMAGENET_MEAN[:channels, None, None]) / IMAGENET_STD[:channels, None, None]
    return normalized[None].astype(np.float32)
