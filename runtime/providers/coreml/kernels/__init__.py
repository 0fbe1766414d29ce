"""numpy kernels for MIL ops, so that a converted program can be evaluated where CoreML cannot run it (Linux).
Every module of this package is imported; a kernel takes the op's inputs by MIL argument name, as numpy values
(float16 widened to float32; strings, bools and ints as Python values), and returns its output(s). The evaluator
rounds each output to the output's MIL type, so float16 programs are evaluated with float16 storage."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import numpy as np

Kernel = Callable[[dict[str, Any]], np.ndarray | tuple[np.ndarray, ...]]

KERNELS: dict[str, Kernel] = {}


def ints(value: Any, default: list[int]) -> list[int]:
    """An int-list argument (a numpy array in the program), or `default` when absent."""
    return default if value is None else [int(v) for v in np.atleast_1d(value)]


def kernel(*op_types: str) -> Callable[[Kernel], Kernel]:
    def decorate(function: Kernel) -> Kernel:
        for op_type in op_types:
            if op_type in KERNELS:
                raise ValueError(f"MIL kernel for {op_type!r} registered twice")
            KERNELS[op_type] = function
        return function

    return decorate


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
