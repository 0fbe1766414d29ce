"""The values a lowering passes between nodes: tensors of the plan (`Runtime`), constants folded at lowering time
(numpy arrays), and the outputs of nodes the core cannot run (`MISSING`); and the matrix-product sizes scratch is
planned for."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

MAX_BLOCK_COLUMNS = 256
"""Columns per packed block in the C matrix-product engine (EP_GEMM_BLOCK): scratch is sized for it."""
MAX_SCRATCH_BYTES = 16 << 20
PANEL_COLUMNS = 32
"""The widest packed panel of any build (AVX-512: two 16-lane vectors): every product needs one at least."""
QUANTIZE, DEQUANTIZE, DYNAMIC, ROUND_TRIP = 0, 1, 2, 3
"""The Quantize plan op's modes (quantize.c)."""


@dataclass(frozen=True)
class Runtime:
    """A value computed at run time: a tensor of the plan."""

    index: int
    dtype: str
    shape: tuple[int, ...]


Value = Runtime | np.ndarray
Scope = MutableMapping[str, Any]


class Missing:
    """The outputs of a node the core cannot run (and of nodes that depend on them)."""


MISSING = Missing()


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    values = {}
    for attr in node.attribute:
        value = onnx.helper.get_attribute_value(attr)
        values[attr.name] = value.decode() if isinstance(value, bytes) else value
    return values
