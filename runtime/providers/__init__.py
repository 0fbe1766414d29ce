"""The registry of execution providers. A provider is a module that calls `register`; adding one is adding a file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import onnx


class CompiledPartition(Protocol):
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


Compile = Callable[[onnx.ModelProto], CompiledPartition]
PROVIDERS: dict[str, Compile] = {}


def register(name: str) -> Callable[[Compile], Compile]:
    def decorate(compile_partition: Compile) -> Compile:
        if name in PROVIDERS:
            raise ValueError(f"provider {name!r} registered twice")
        PROVIDERS[name] = compile_partition
        return compile_partition

    return decorate


from . import reference  # noqa: E402,F401  (registration)
