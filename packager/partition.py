"""The partitioner: nodes go to the first provider of the profile that claims them, form maximal acyclic partitions,
and what no accelerator takes (or what one refuses to compile) falls back to the CPU provider."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import onnx

from edgepack.runtime.capability import Values, graph_values, model_opsets
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS


@dataclass
class Partition:
    id: str
    provider: str
    model: onnx.ModelProto
    """The partition as a standalone ONNX model: its inputs, outputs and the weights it reads."""
    ops: list[str] = field(default_factory=list)

    @property
    def inputs(self) -> list[str]:
        return [i.name for i in self.model.graph.input]

    @property
    def outputs(self) -> list[str]:
        return [o.name for o in self.model.graph.output]

    @property
    def nodes(self) -> int:
        return len(self.model.graph.node)


Compiles = Callable[[str, onnx.ModelProto], bool]


def provider_compiles(provider: str, model: onnx.ModelProto) -> bool:
    """Whether the provider's own compiler takes the piece (any refusal, whatever its type, means it does not)."""
    try:
        PROVIDERS[provider].compile(model, {})
    except Exception:  # noqa: BLE001  (any refusal by the provider's compiler means: not this subgraph)
        return False
    return True


def partition(model: onnx.ModelProto, providers: list[str], fallback: str,
              compiles: Compiles = provider_compiles) -> list[Partition]:
    """Split `model` into partitions for `providers` (priority order); the rest goes to `fallback`."""
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    values = graph_values(graph)
    opsets = model_opsets(inferred)
    accelerators = [p for p in providers if p != fallback]
    owners = [next((p for p in accelerators if PROVIDERS[p].capability.refusal(n, opsets, values) is None), fallback)
              for n in graph.node]
    graph_parts = _GraphParts(inferred)
    pieces: list[tuple[str, list[int]]] = []
    for provider, members in _groups(graph, owners, graph_parts.reads, graph_parts.weight_nodes):
        if provider == fallback:
            pieces.append((provider, members))
        else:
            split = list(_compiled_pieces(graph_parts, provider, fallback, members, compiles))
            pieces.extend(_rejoin(graph_parts, split, fallback, compiles))
    cuts = [(provider, graph_parts.extract(members)) for provider, members in _merge_fallbacks(pieces, fallback)]
    if PROVIDERS[fallback].load is None:
        _refuse_what_the_fallback_cannot_run(graph, owners, fallback, opsets, values)
    return [Partition(f"p{i}", provider, cut, sorted({node.op_type for node in cut.graph.node}))
            for i, (provider, cut) in enumerate(cuts)]


def _refuse_what_the_fallback_cannot_run(graph: onnx.GraphProto, owners: list[str], fallback: str,
                                         opsets: dict[str, int], values: Values) -> None:
    """A fallback that takes ONNX only (`reference`) compiles its partitions when the bundle is opened: the nodes it
    does not claim are refused now, by op and node, rather than when an app opens the bundle."""
    capability = PROVIDERS[fallback].capability
    refused = [(node, reason) for node, owner in zip(graph.node, owners) if owner == fallback
               and (reason := capability.refusal(node, opsets, values)) is not None]
    if refused:
        listed = "; ".join(f"{node.op_type} ({node.domain or 'ai.onnx'}) at node {node.name or '(unnamed)'!r}: "
                           f"{reason}" for node, reason in refused[:5])
        raise EdgepackError(f"no provider of this profile runs {len(refused)} node(s): {listed}",
                            where=f"partition stage, {fallback} provider",
                            fix="replace these ops in the model (export it without them), or build with a profile "
                                "whose providers run them (`edgepack profiles`)")


class _GraphParts:
    """Cuts standalone models out of one graph; what every cut needs (the values each node reads, the weights, the
    value types) is computed once, and each cut once.

    Weight nodes (computed from weights alone, such as the Cast of an fp16 weight) belong to no partition: each cut
    takes a copy of those it reads, so weights never cross partitions at run time."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self.reads = [_reads(node) for node in graph.node]
        self.weights = {t.name: t for t in graph.initializer}
        self.known = {v.name: v for v in [*graph.input, *graph.value_info, *graph.output]}
        self.graph_outputs = {o.name for o in graph.output}
        self.producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        self.weight_nodes = self._weight_nodes()
        self.cuts: dict[tuple[int, ...], onnx.ModelProto] = {}

    def _weight_nodes(self) -> set[int]:
        overridable = {i.name for i in self.model.graph.input}
        constant = {name for name in self.weights if name not in overridable}
        found: set[int] = set()
        for index, node in enumerate(self.model.graph.node):
            outputs = [out for out in node.output if out]
            if (self.reads[index] and self.reads[index] <= constant and outputs
                    and not any(out in self.graph_outputs for out in outputs)):
                found.add(index)
                constant.update(outputs)
        return found

    def _with_weight_nodes(self, members: list[int]) -> list[int]:
        """`members` plus the weight nodes they read, directly or through other weight nodes."""
        needed, todo = set(members), list(members)
        while todo:
            for name in self.reads[todo.pop()]:
                source = self.producer.get(name)
                if source in self.weight_nodes and source not in needed:
                    needed.add(source)
                    todo.append(source)
        return sorted(needed)

    def extract(self, members: list[int]) -> onnx.ModelProto:
        """The nodes `members` of the graph as a standalone model."""
        key = tuple(members)
        if key not in self.cuts:
            self.cuts[key] = self._cut(members)
        return self.cuts[key]

    def _cut(self, members: list[int]) -> onnx.ModelProto:
        graph = self.model.graph
        members = self._with_weight_nodes(members)
        nodes = [graph.node[i] for i in members]
        produced = {out for node in nodes for out in node.output if out}
        inside = set(members) | self.weight_nodes
        later_reads = set().union(*(reads for i, reads in enumerate(self.reads) if i not in inside))
        ordered_reads = [name for i in members for name in sorted(self.reads[i])]
        inputs = list(dict.fromkeys(n for n in ordered_reads if n not in produced and n not in self.weights))
        outputs = list(dict.fromkeys(out for node in nodes for out in node.output
                                     if out and (out in later_reads or out in self.graph_outputs)))
        sub = onnx.helper.make_graph(
            nodes, graph.name or "partition", [self._value_info(name) for name in inputs],
            [self._value_info(name) for name in outputs],
            initializer=[self.weights[n] for n in dict.fromkeys(ordered_reads) if n in self.weights],
            value_info=[v for v in graph.value_info if v.name in produced and v.name not in outputs])
        return onnx.helper.make_model(sub, opset_imports=list(self.model.opset_import),
                                      ir_version=self.model.ir_version, functions=list(self.model.functions))

    def _value_info(self, name: str) -> onnx.ValueInfoProto:
        if name not in self.known:
            raise ValueError(f"the type of {name!r} is unknown after shape inference, so it cannot cross partitions")
        return self.known[name]


def _groups(graph: onnx.GraphProto, owners: list[str], reads: list[set[str]], weight_nodes: set[int]
            ) -> list[tuple[str, list[int]]]:
    """Greedy maximal acyclic grouping: a node joins a group of its provider unless that would close a cycle.
    Weight nodes join no group (each cut copies those it reads)."""
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    group_of: dict[int, int] = {}
    groups: list[tuple[str, list[int]]] = []
    ancestors: list[set[int]] = []  # groups each group depends on, transitively
    for index in range(len(graph.node)):
        if index in weight_nodes:
            continue
        before = {group_of[producer[name]] for name in reads[index] if producer.get(name) in group_of}
        upstream = set(before).union(*(ancestors[g] for g in before))
        candidates = [g for g, (provider, _) in enumerate(groups) if provider == owners[index]
                      and not any(g in ancestors[other] for other in before if other != g)]
        if candidates:
            chosen = max(candidates)
        else:
            chosen = len(groups)
            groups.append((owners[index], []))
            ancestors.append(set())
        groups[chosen][1].append(index)
        group_of[index] = chosen
        ancestors[chosen] |= upstream - {chosen}
        for g, seen in enumerate(ancestors):
            if chosen in seen:
                seen |= ancestors[chosen]
    # A group comes after its ancestors: it has every one of their ancestors and them besides.
    return [groups[g] for g in sorted(range(len(groups)), key=lambda g: (len(ancestors[g]), g))]


def _compiled_pieces(parts: _GraphParts, provider: str, fallback: str, members: list[int],
                     compiles: Compiles) -> Iterator[tuple[str, list[int]]]:
    """The group as one piece if its provider compiles it; else halves, down to single nodes that fall back."""
    if compiles(provider, parts.extract(members)):
        yield provider, members
    elif len(members) == 1:
        yield fallback, members
    else:
        half = len(members) // 2
        yield from _compiled_pieces(parts, provider, fallback, members[:half], compiles)
        yield from _compiled_pieces(parts, provider, fallback, members[half:], compiles)


def _rejoin(parts: _GraphParts, pieces: list[tuple[str, list[int]]], fallback: str, compiles: Compiles
            ) -> list[tuple[str, list[int]]]:
    """Undo needless splits: neighbouring pieces of one accelerator join when the provider compiles them together."""
    joined: list[tuple[str, list[int]]] = []
    for provider, members in pieces:
        if joined and joined[-1][0] == provider != fallback:
            together = joined[-1][1] + members
            if compiles(provider, parts.extract(together)):
                joined[-1] = (provider, together)
                continue
        joined.append((provider, members))
    return joined


def _merge_fallbacks(pieces: list[tuple[str, list[int]]], fallback: str) -> list[tuple[str, list[int]]]:
    merged: list[tuple[str, list[int]]] = []
    for provider, members in pieces:
        if merged and merged[-1][0] == provider == fallback and min(members) > max(merged[-1][1]):
            merged[-1] = (provider, merged[-1][1] + members)
        else:
            merged.append((provider, members))
    return merged


def _reads(node: onnx.NodeProto) -> set[str]:
    """Every value a node reads, including outer-scope values its subgraphs use."""
    names = {name for name in node.input if name}
    for attr in node.attribute:
        for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            names |= _outer_reads(body)
    return names


def _outer_reads(graph: onnx.GraphProto) -> set[str]:
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    local |= {out for node in graph.node for out in node.output}
    reads: set[str] = set()
    for node in graph.node:
        reads |= _reads(node)
    reads |= {o.name for o in graph.output}
    return reads - local


def whole(model: onnx.ModelProto, provider: str) -> Partition:
    """The whole model as one partition on `provider`."""
    return Partition("p0", provider, model, sorted({node.op_type for node in model.graph.node}))
