"""The quantize stage: quantize a slimmed model as the profile asks, keeping chosen nodes in float.

A weight mode is a module that registers a function `(model, keep, calibration) -> QuantizeResult`; `keep` names
top-level nodes whose weights (and those read inside their subgraphs) stay in fp32, and `calibration` (or None)
lets integer weights round with compensated errors. An activation mode registers the same signature and runs
after the weight mode; it measures activation ranges on `calibration`."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import onnx

from edgepack.runtime.graph_protos import iter_graph_protos


@dataclass(frozen=True)
class QuantizeResult:
    model: onnx.ModelProto
    nodes: list[str] = field(default_factory=list)
    """Top-level nodes whose weights or compute were quantized: the candidates for keeping in float."""
    tensors: int = 0
    """Weight tensors quantized."""


MIN_ELEMENTS = 16
"""Smaller weights (scalars, shape-like constants) stay fp32: they weigh nothing and are often sensitive."""

REQUIRED_OPSET = {"int8": 13, "int4": 21}
"""Weight precisions whose form needs a newer opset than the profile's minimum (DequantizeLinear with an axis: 13;
int4 and blocks: 21)."""

Feeds = dict[str, np.ndarray]
Run = Callable[[onnx.ModelProto, Feeds], Feeds]
"""Runs a model on feeds and returns every graph output by name."""


@dataclass(frozen=True)
class Calibration:
    """What static int8 measures activation ranges on: samples, how to run the model, how to pick a range. One
    Calibration serves one model: it keeps the ranges it measured."""

    samples: Sequence[Feeds]
    run: Run
    method: str = "minmax"
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict, compare=False)
    """Ranges measured so far, by value name: a build quantizes the same model again with other nodes kept, and
    the values it calibrates are then among those already measured."""
    rounded: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict, compare=False)
    """Compensated grid indices by (weight precision, weight name, highest index), kept for the same reason."""
    grams: dict[str, np.ndarray | None] = field(default_factory=dict, compare=False)
    """Gram matrices of the compensated nodes' inputs by node name (None: not measurable). Equalizing channels
    scales a depthwise Conv's Gram by a constant per group, which compensated rounding does not depend on."""


Mode = Callable[[onnx.ModelProto, frozenset[str], Calibration | None], QuantizeResult]
WeightMode = Callable[[onnx.ModelProto, frozenset[str], Calibration | None, frozenset[str]], QuantizeResult]
"""A Mode that also takes the op types the activation mode will multiply in integers (`integer_op_types`)."""
WEIGHT_MODES: dict[str, WeightMode] = {}
COMPENSATED_WEIGHTS = frozenset({"int8", "int4"})
"""Weight precisions that round with compensated errors when given calibration samples (`compensate.py`)."""
ACTIVATION_MODES: dict[str, Mode] = {}


M = TypeVar("M", Mode, WeightMode)


def _registrar(table: dict[str, M], kind: str) -> Callable[[str], Callable[[M], M]]:
    """A decorator factory that files a mode under its name in `table`, once."""

    def register(name: str) -> Callable[[M], M]:
        def decorate(mode: M) -> M:
            if name in table:
                raise ValueError(f"{kind} mode {name!r} registered twice")
            table[name] = mode
            return mode

        return decorate

    return register


register_weights = _registrar(WEIGHT_MODES, "weight")
register_activations = _registrar(ACTIVATION_MODES, "activation")


def quantize(model: onnx.ModelProto, weights: str, keep: frozenset[str] = frozenset(), activations: str = "fp32",
             calibration: Calibration | None = None) -> QuantizeResult:
    """`model` with weights stored as `weights` and compute in `activations` (fp32: unchanged), except for the
    nodes in `keep`. fp16 activations store every weight in fp16 themselves; calibrated int8 activations equalize
    channel ranges first (`equalize.py`); the weights int8 activations multiply in integers are narrowed."""
    named = with_node_names(model)
    if activations == "int8" and calibration is not None:
        named = equalize_channels(named, calibration)
    result = QuantizeResult(named)
    if weights != "fp32" and not (weights == "fp16" and activations == "fp16"):
        integer_ops = integer_op_types(activations, calibration)
        result = WEIGHT_MODES[weights](result.model, keep, calibration, integer_ops)
    if activations != "fp32":
        computed = ACTIVATION_MODES[activations](result.model, keep, calibration)
        nodes = set(result.nodes) | set(computed.nodes)
        result = QuantizeResult(computed.model, [n.name for n in computed.model.graph.node if n.name in nodes],
                                result.tensors + computed.tensors)
    return result


def with_node_names(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` in which every top-level node has a unique name (kept nodes are named by it)."""
    named = onnx.ModelProto()
    named.CopyFrom(model)
    taken = {node.name for node in named.graph.node if node.name}
    for index, node in enumerate(named.graph.node):
        if not node.name:
            node.name = _fresh(f"{node.op_type}_{index}", taken)
            taken.add(node.name)
    return named


def _fresh(name: str, taken: set[str]) -> str:
    candidate, suffix = name, 0
    while candidate in taken:
        suffix += 1
        candidate = f"{name}_{suffix}"
    return candidate


def readers(model: onnx.ModelProto) -> dict[str, set[str]]:
    """For each value name, the top-level nodes that read it, directly or inside their subgraphs."""
    readers_of: dict[str, set[str]] = {}
    for node in model.graph.node:
        for name in _reads_within(node):
            readers_of.setdefault(name, set()).add(node.name)
    return readers_of


def _reads_within(node: onnx.NodeProto) -> Iterator[str]:
    yield from (name for name in node.input if name)
    for attr in node.attribute:
        for graph in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            for sub in iter_graph_protos(graph):
                for inner in sub.node:
                    yield from (name for name in inner.input if name)


from . import activations_fp16, activations_int8, weights_fp16, weights_int  # noqa: E402,F401  (registration)
from .activations_int8 import integer_op_types  # noqa: E402
from .equalize import equalize_channels  # noqa: E402
