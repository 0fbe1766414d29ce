"""How far a runtime's output is from the reference output, on the output's own scale."""

from __future__ import annotations

import numpy as np


def relative_error(expected: np.ndarray, actual: np.ndarray) -> float:
    """Max abs diff over max(1, max |expected|): absolute for outputs within [-1, 1], relative beyond."""
    expected = np.asarray(expected, dtype=np.float64)
    if expected.size == 0:
        return 0.0
    return float(np.abs(expected - np.asarray(actual, dtype=np.float64)).max() / max(1.0, np.abs(expected).max()))
