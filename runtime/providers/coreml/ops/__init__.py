"""ONNX -> MIL op converters, registered in one table. Every module of this package is imported, so adding an op
is adding a file: a function decorated with `converts` that emits MIL ops through `ctx.mb` and records the node's
outputs with `ctx.set`."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import onnx

from ....capability import MAX_OPSET, Values
from ..context import Context

Limit = Callable[[onnx.NodeProto, Values], str | None]
Convert = Callable[[Context, onnx.NodeProto], None]


@dataclass(frozen=True)
class Converter:
    op_type: str
    convert: Convert
    limit: Limit | None = None
    """Why a node of this op is out of reach (an attribute value, an input that must be constant), or None."""
    opsets: tuple[int, int] = (1, MAX_OPSET)
    types: frozenset[str] | None = None
    """The element types its non-constant inputs and outputs may have; None: the provider's float types."""


CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str, limit: Limit | None = None, opsets: tuple[int, int] = (1, MAX_OPSET),
             types: frozenset[str] | None = None) -> Callable[[Convert], Convert]:
    def decorate(convert: Convert) -> Convert:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise ValueError(f"CoreML converter for {op_type!r} registered twice")
            CONVERTERS[op_type] = Converter(op_type, convert, limit, opsets, types)
        return convert

    return decorate


for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
