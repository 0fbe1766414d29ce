"""The registry of slim passes. A pass is a module that calls `register`; adding one is adding a file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx_ir as ir


@dataclass(frozen=True)
class SlimPass:
    name: str
    summary: str
    apply: Callable[[ir.Model], ir.Model]
    """Returns the rewritten model: the same object mutated in place, or a new one."""


PASSES: dict[str, SlimPass] = {}


def register(name: str, summary: str) -> Callable[[Callable[[ir.Model], ir.Model]], Callable[[ir.Model], ir.Model]]:
    def decorate(apply: Callable[[ir.Model], ir.Model]) -> Callable[[ir.Model], ir.Model]:
        if name in PASSES:
            raise ValueError(f"slim pass {name!r} registered twice")
        PASSES[name] = SlimPass(name, summary, apply)
        return apply

    return decorate


from . import (  # noqa: E402,F401  (registration)
    constant_to_initializer,
    cse,
    dead_code,
    dedupe_initializers,
    fold_conv_bn,
    fold_conv_mul_add,
    library_onnxscript,
    library_onnxslim,
    matmul_add_to_gemm,
    noop_elimination,
)
