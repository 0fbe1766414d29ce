"""The quantize stage: lower a slimmed model's precision as the profile asks, keeping chosen nodes in float.

A weight mode is a module that registers a function `(model, keep) -> QuantizeResult`; `keep` names top-level
nodes whose weights (and those read inside their subgraphs) stay in fp32. An activation mode registers
`(model, keep, calibration) -> QuantizeResult` and runs after the weight mode; `calibration` is given to the
modes that measure activation ranges."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx

from ..graphs import iter_graph_protos


@dataclass(frozen=True)
class QuantizeResult:
    model: onnx.ModelProto
    nodes: list[str] = field(default_factory=list)
    """Top-level nodes whose weights or compute were lowered: the candidates for keeping in float."""
    tensors: int = 0
    """Weight tensors lowered."""


MIN_ELEMENTS = 16
"""Smaller weights (scalars, shape-like constants) stay fp32: they weigh nothing and are often sensitive."""

REQUIRED_OPSET = {"int8": 13, "int4": 21}
"""Weight precisions whose form needs a newer opset than the profile's minimum (DequantizeLinear with an axis: 13;
int4 and blocks: 21)."""

WeightMode = Callable[[onnx.ModelProto, frozenset[str]], QuantizeResult]
WEIGHT_MODES: dict[str, WeightMode] = {}
Feeds = dict[str, np.ndarray]
Run = Callable[[onnx.ModelProto, Feeds], Feeds]
"""Runs a model on feeds and returns every graph output by name."""


@dataclass(frozen=True)
class Calibration:
    """What static int8 measures activation ranges on: samples, how to run the model, how to pick a range."""

    samples: Sequence[Feeds]
    run: Run
    method: str = "minmax"


ActivationMode = Callable[[onnx.ModelProto, frozenset[str], Calibration | None], QuantizeResult]
ACTIVATION_MODES: dict[str, ActivationMode] = {}


def register_weights(name: str) -> Callable[[WeightMode], WeightMode]:
    def decorate(mode: WeightMode) -> WeightMode:
        if name in WEIGHT_MODES:
            raise ValueError(f"weight mode {name!r} registered twice")
        WEIGHT_MODES[name] = mode
        return mode

    return decorate


def register_activations(name: str) -> Callable[[ActivationMode], ActivationMode]:
    def decorate(mode: ActivationMode) -> ActivationMode:
        if name in ACTIVATION_MODES:
            raise ValueError(f"activation mode {name!r} registered twice")
        ACTIVATION_MODES[name] = mode
        return mode

    return decorate


def quantize(model: onnx.ModelProto, weights: str, keep: frozenset[str] = frozenset(), activations: str = "fp32",
             calibration: Calibration | None = None) -> QuantizeResult:
    """`model` with weights stored as `weights` and compute in `activations` (fp32: unchanged), except for the
    nodes in `keep`. fp16 activations store every weight in fp16 themselves."""
    result = QuantizeResult(with_node_names(model))
    if weights != "fp32" and not (weights == "fp16" and activations == "fp16"):
        result = WEIGHT_MODES[weights](result.model, keep)
    if activations != "fp32":
        lowered = ACTIVATION_MODES[activations](result.model, keep, calibration)
        nodes = set(result.nodes) | set(lowered.nodes)
        result = QuantizeResult(lowered.model, [n.name for n in lowered.model.graph.node if n.name in nodes],
                                result.tensors + lowered.tensors)
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
