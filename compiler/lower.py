"""ONNX model + concrete input shapes -> `.epk` plan bytes. Shapes are all concrete in a plan: shape-computing
subgraphs fold to constants once the input shapes are known, both branches of a run-time If are lowered, and
every other node becomes plan ops through the emitters of `emitters/`."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgepack.runtime.capability import MAX_VALUE_ELEMENTS, RANDOM_OPS, Values, has_subgraph, outer_reads
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.function_bodies import defines_body, function_nodes
from edgepack.runtime.native import epk
from edgepack.runtime.native.epk import ARENA, WEIGHT, Op, Plan, Tensor

from .arena import plan_arena
from .emitters import EMITTERS, NotConstant
from .emitters.int8_matmul import without_unread_round_trips
from .folding import fold_node, shape_value
from .narrowed import lower_in_float32, takes_float32_copies
from .patterns import rewrite_gelu, rewrite_hard_swish, rewrite_swish
from .quantized import Quantized, follow, from_dequantize, from_half_cast
from .subnormals import has_subnormal_weight, without_subnormals
from .values import (
    MAX_BLOCK_COLUMNS,
    MAX_SCRATCH_BYTES,
    MISSING,
    PANEL_COLUMNS,
    Missing,
    Runtime,
    Scope,
    Value,
    attributes,
)
from .weight_slots import WeightSlots

LOWERED_IN_PLACE = ("If", "Shape", "Size")
"""Ops the lowering handles itself rather than through an emitter."""


def node_label(node: onnx.NodeProto) -> str:
    """How the lowering names a node in its errors: `OpType (name)`."""
    return f"{node.op_type} ({node.name or node.output[0]})"


class MissingKernels(EdgepackError):
    """Nodes the core has no kernel for: those the lowering reached, and those after them it never reached."""

    def __init__(self, nodes: list[str], where: str) -> None:
        self.nodes = nodes
        super().__init__(f"the cpu core cannot run {len(nodes)} node(s): {', '.join(nodes[:20])}"
                         f"{' ...' if len(nodes) > 20 else ''}", where=where,
                         fix="run these nodes on another provider (partition the model), or replace them with ops the "
                             "core has (runtime/native/EPK.md lists them)")


class NeedsValues(EdgepackError):
    """Model inputs whose values shape other tensors (a Reshape's shape, a reduction's axes): the plan can only be
    lowered for given values of them, which it then guards (a Guard op refuses any other value at run time)."""

    def __init__(self, names: list[str], node: onnx.NodeProto) -> None:
        self.names = names
        super().__init__(f"model input(s) {', '.join(map(repr, names))} shape the outputs of {node_label(node)}, so "
                         "a plan needs their values", where=node.name or node.output[0],
                         fix="give their values when lowering (lower(model, shapes, values)), or make them "
                             "constants in the model")


SHAPE_FIRST = ("ConstantOfShape", "Range")
"""Ops whose first input (not only later ones) gives their output's shape."""


class Lowering:
    """The plan under construction: tensors, ops, buffer aliases and scratch, for one model at fixed input shapes."""

    def __init__(self, model: onnx.ModelProto, packed_weights: bool = True, expand_weights: bool = False) -> None:
        self.model = model
        self.packed_weights = packed_weights
        """Whether a product by a constant weight may take the weight packed at plan time (PackedMatMul, which
        WebGPU does not run)."""
        self.slots = WeightSlots(expand_weights)
        """Quantized weights in weight slots: with `expand_weights` made float32 once, when a session opens (its
        ExpandWeight ops), else dequantized at each call."""
        self.opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in model.opset_import}
        self.opset = self.opsets.get("", 1)
        self.tensors: list[Tensor] = []
        self.ops: list[Op] = []
        self.aliases: dict[int, int] = {}
        self.scratch = 0
        self.missing: list[str] = []
        self.weights: dict[int, tuple[int, Any]] = {}
        self.reshaped: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        self.uses = _uses(model.graph)
        self.derived: dict[int, frozenset[str]] = {}
        """Run-time values computed from model inputs and constants only, with the names of those inputs: the plan
        can be lowered for the inputs' values, and the values are then constants."""
        self.graph_outputs = {o.name for o in model.graph.output}

    # tensors and ops

    def arena(self, name: str, dtype: str, shape: Sequence[int]) -> Runtime:
        if dtype not in epk.DTYPES:
            raise EdgepackError(f"value {name!r} has dtype {dtype}, which the cpu core does not hold", where=name,
                                fix="cast it to float32 or int64 in the model, or run this node on another provider")
        self.tensors.append(Tensor(name, dtype, tuple(int(d) for d in shape)))
        return Runtime(len(self.tensors) - 1, dtype, tuple(int(d) for d in shape))

    def tensor(self, value: Value | Quantized, name: str = "") -> int:
        """The plan tensor of `value`; a constant becomes a weight (once per array)."""
        if isinstance(value, Runtime):
            return value.index
        array = value.values if isinstance(value, Quantized) else np.asarray(value)
        key = id(value)
        if key not in self.weights or self.weights[key][1] is not value:
            if array.dtype.name not in epk.DTYPES:
                raise EdgepackError(f"constant {name!r} has dtype {array.dtype.name}, which the cpu core does not hold",
                                    where=name, fix="cast it in the model")
            self.tensors.append(Tensor(name or f"weight{len(self.weights)}", array.dtype.name, array.shape, WEIGHT,
                                       np.ascontiguousarray(array)))
            self.weights[key] = (len(self.tensors) - 1, value)
        return self.weights[key][0]

    def reshaped_weight(self, weight: np.ndarray, form: str, make: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`make(weight)`, made once per weight and form: the nodes that share a weight share its transposed or
        packed copy in the plan too."""
        key = (id(weight), form)
        if key not in self.reshaped or self.reshaped[key][0] is not weight:
            self.reshaped[key] = (weight, make(weight))
        return self.reshaped[key][1]

    def emit(self, kind: str, inputs: Sequence[Value | Quantized | None], outputs: Sequence[Runtime],
             params: Sequence[Any] = (), scratch: int = 0) -> None:
        values, params, scratch = self.slots.place(self, kind, list(inputs), list(params), scratch)
        values = [self.reshaped_weight(v, "normal", without_subnormals) if has_subnormal_weight(kind, v) else v
                  for v in values]
        indices = [None if v is None else self.tensor(v) for v in values]
        self.ops.append(Op(kind, indices, [o.index for o in outputs], list(params)))
        self.scratch = max(self.scratch, scratch)

    def writer(self, index: int) -> Op | None:
        """The op emitted last that writes tensor `index`, or None."""
        return next((op for op in reversed(self.ops) if index in op.outputs), None)

    def alias(self, name: str, source: Runtime, shape: Sequence[int]) -> Runtime:
        """A reshape of `source` that shares its buffer."""
        out = self.arena(name, source.dtype, shape)
        if self.tensors[source.index].location == ARENA:
            self.aliases[out.index] = source.index
        self.emit("Copy", [source], [out])
        return out

    @staticmethod
    def gemm_scratch(k: int, n: int) -> int:
        """Scratch for a product with `k` packed rows and `n` columns: one block of packed columns."""
        columns = max(PANEL_COLUMNS, min(MAX_BLOCK_COLUMNS, (n + 31) // 32 * 32))
        return max(k * PANEL_COLUMNS * 4, min(k * columns * 4, MAX_SCRATCH_BYTES))

    # shapes

    def infer(self, node: onnx.NodeProto, inputs: Sequence[Value | None]) -> list[tuple[str, tuple[int, ...]]]:
        """The dtype and concrete shape of each output of `node`, from onnx's shape inference with constant inputs
        given as data."""
        schema = onnx.defs.get_schema(node.op_type, self.opsets.get(node.domain, 1), node.domain)
        types, data = {}, {}
        for name, value in zip(node.input, inputs):
            if not name or value is None:
                continue
            if isinstance(value, (Runtime, Quantized)):
                dtype, shape = value.dtype, value.shape
            else:
                array = np.asarray(value)
                dtype, shape = array.dtype.name, array.shape
                data[name] = numpy_helper.from_array(array, name)
            elem = epk.DTYPES.get(dtype) or onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
            types[name] = onnx.helper.make_tensor_type_proto(elem, list(shape))
        inferred = onnx.shape_inference.infer_node_outputs(
            schema, node, types, data, opset_imports=list(self.model.opset_import))
        results = []
        for name in node.output:
            tensor_type = inferred[name].tensor_type if name in inferred else None
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim] \
                if tensor_type is not None and tensor_type.HasField("shape") else None
            if tensor_type is None or dims is None or None in dims:
                self.raise_if_inputs_shape(node, inputs)
                raise EdgepackError(f"the shape of {name!r} ({node.op_type} node {node.name!r}) is not known at these "
                                    "input shapes", where=node.name or name,
                                    fix="pin the input shapes, or make the shape inputs of this node constants")
            results.append((onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name, tuple(dims)))
        return results

    def raise_if_inputs_shape(self, node: onnx.NodeProto, inputs: Sequence[Value | None]) -> None:
        """NeedsValues when small values derived from model inputs (past the data input) could give the node's output
        shapes."""
        first = 0 if node.op_type in SHAPE_FIRST else 1
        names = {name for v in inputs[first:] if isinstance(v, Runtime) and v.index in self.derived and
                 np.prod(v.shape) <= MAX_VALUE_ELEMENTS for name in self.derived[v.index]}
        if names:
            raise NeedsValues(sorted(names), node)

    def outputs(self, node: onnx.NodeProto, inputs: Sequence[Value | None]) -> list[Runtime]:
        return [self.arena(name, dtype, shape) for name, (dtype, shape) in zip(node.output, self.infer(node, inputs))]

    # the graph walk

    def lower_graph(self, graph: onnx.GraphProto, scope: Scope) -> None:
        for init in graph.initializer:
            scope[init.name] = numpy_helper.to_array(init)
        for node in graph.node:
            self.lower_node(node, scope)

    def lower_node(self, node: onnx.NodeProto, scope: Scope) -> None:
        inputs = []
        for name in node.input:
            if name and name not in scope:
                raise EdgepackError(f"node {node.name!r} reads {name!r}, which no node computes", where=node.name,
                                    fix="check the model with onnx.checker")
            inputs.append(scope[name] if name else None)
        if any(isinstance(v, Missing) for v in inputs):
            if node.op_type not in EMITTERS and node.op_type not in LOWERED_IN_PLACE:
                self.missing.append(node_label(node))
            values: list[Any] = [MISSING] * len(node.output)
        elif node.op_type == "If" and node.domain in ("", "ai.onnx"):
            values = self.lower_if(node, inputs[0], scope)
        elif node.op_type == "DequantizeLinear" and node.domain in ("", "ai.onnx") and \
                (quantized := from_dequantize(node, inputs)) is not None:
            values = [quantized]
        elif node.op_type == "Cast" and node.domain in ("", "ai.onnx") and \
                (quantized := from_half_cast(node, inputs)) is not None:
            values = [quantized]
        elif node.op_type in ("Reshape", "Cast") and isinstance(inputs[0], Quantized) and \
                (quantized := follow(node, inputs[0], *self.infer(node, inputs)[0][::-1])) is not None:
            values = [quantized]
        elif all(not isinstance(v, Runtime) for v in inputs) and not has_subgraph(node):
            values = fold_node(node, inputs, self.model)
        elif node.op_type in ("Shape", "Size") and isinstance(inputs[0], Runtime):
            values = [shape_value(node, inputs[0].shape)]
        elif node.domain in ("", "ai.onnx") and node.op_type in EMITTERS:
            values = self.emit_or_expand(node, inputs, scope)
        else:
            values = self.lower_without_emitter(node, inputs, scope)
        self.track_derived(node, [*inputs, *(scope.get(name) for name in outer_reads(node))], values)
        for name, value in zip(node.output, values):
            if name:
                scope[name] = value

    def track_derived(self, node: onnx.NodeProto, reads: list[Any], outputs: list[Any]) -> None:
        """Records the node's run-time outputs as derived when it reads (its subgraphs too) only derived values and
        constants."""
        if node.op_type in RANDOM_OPS:
            return
        roots: set[str] = set()
        for value in reads:
            if isinstance(value, Runtime):
                if value.index not in self.derived:
                    return
                roots |= self.derived[value.index]
        for value in outputs:
            if roots and isinstance(value, Runtime):
                self.derived.setdefault(value.index, frozenset(roots))

    def lower_without_emitter(self, node: onnx.NodeProto, inputs: list[Any], scope: Scope) -> list[Any]:
        """A node no emitter covers: through its ONNX function body, or reported as missing."""
        if node.op_type in SHAPE_FIRST:
            self.raise_if_inputs_shape(node, inputs)
        body = self.function_body(node, inputs)
        if body is not None:
            return self.lower_body(node, body, scope)
        self.missing.append(node_label(node))
        return [MISSING] * len(node.output)

    def emit_or_expand(self, node: onnx.NodeProto, inputs: list[Any], scope: Scope) -> list[Any]:
        """The node through its emitter, or through its ONNX function body where the core's claims refuse the node
        itself (an attribute, dtype or output its kernel lacks) and onnx defines a body."""
        if defines_body(node, self.opsets) and self.claim_refusal(node, inputs) is not None and \
                (body := self.function_body(node, inputs)) is not None:
            return self.lower_body(node, body, scope)
        try:
            if takes_float32_copies(node, inputs):
                return lower_in_float32(self, node, inputs)
            return EMITTERS[node.op_type](self, node, inputs)
        except NotConstant as error:
            if error.value.index in self.derived:
                raise NeedsValues(sorted(self.derived[error.value.index]), node) from error
            raise

    def fold(self, node: onnx.NodeProto, inputs: Sequence[Any]) -> list[np.ndarray]:
        """The node's outputs computed now from its known inputs."""
        return fold_node(node, inputs, self.model)

    def claim_refusal(self, node: onnx.NodeProto, inputs: Sequence[Value | None]) -> str | None:
        """What the core's claims (ops.toml) say against this node at these values, or None."""
        from edgepack.runtime.providers import PROVIDERS

        values = Values()
        try:
            outputs = self.infer(node, inputs)
        except EdgepackError as error:
            return str(error)
        for name, value in zip(node.input, inputs):
            if name and value is not None:
                values.types[name], values.shapes[name] = _dtype(value).name, list(_shape(value))
                if not isinstance(value, Runtime):
                    values.constants.add(name)
                    values.known.add(name)
        for name, (dtype, shape) in zip(node.output, outputs):
            values.types[name], values.shapes[name] = dtype, list(shape)
        return PROVIDERS["cpu"].capability.claim_refusal(node, self.opsets, values)

    def function_body(self, node: onnx.NodeProto, inputs: Sequence[Value | None]) -> list[onnx.NodeProto] | None:
        types = [onnx.TypeProto() if value is None else onnx.helper.make_tensor_type_proto(
            onnx.helper.np_dtype_to_tensor_dtype(_dtype(value)), list(_shape(value))) for value in inputs]
        return function_nodes(node, self.opsets, types)

    def lower_body(self, node: onnx.NodeProto, body: list[onnx.NodeProto], scope: Scope) -> list[Any]:
        inner: Scope = ChainMap({}, scope)
        for body_node in body:
            self.lower_node(body_node, inner)
        return [inner[name] if name else None for name in node.output]

    def lower_if(self, node: onnx.NodeProto, condition: Value, scope: Scope) -> list[Any]:
        attrs = attributes(node)
        branches = [attrs["then_branch"], attrs["else_branch"]]
        if not isinstance(condition, Runtime):
            chosen = branches[0] if bool(np.asarray(condition).reshape(-1)[0]) else branches[1]
            inner: Scope = ChainMap({}, scope)
            self.lower_graph(chosen, inner)
            return [inner[o.name] for o in chosen.output]
        if condition.dtype != "bool":
            raise EdgepackError(f"If node {node.name!r} has a {condition.dtype} condition", where=node.name,
                                fix="make the condition a bool tensor")
        skip_then = len(self.ops)
        self.emit("SkipUnless", [condition], [], [0])
        results: list[Runtime] = []
        failures: list[str] = []
        for b, branch in enumerate(branches):
            mark = self.mark()
            try:
                values = self.lower_branch(node, branch, scope, results, first=b == 0)
            except Exception as error:  # a branch that cannot run at these shapes: fail if taken
                self.rewind(mark)
                failures.append(f"{branch.name or ('then', 'else')[b]}: {error}")
                if b == 0:
                    raise EdgepackError(f"the then-branch of If node {node.name!r} cannot be lowered at these input "
                                        f"shapes ({error})", where=node.name,
                                        fix="pin input shapes that the then-branch accepts") from error
                self.emit("Fail", [], [])
                values = results
            if any(isinstance(v, Missing) for v in values):
                return [MISSING] * len(node.output)
            if b == 0:
                skip_else = len(self.ops)
                self.emit("Skip", [], [], [0])
                self.ops[skip_then].params = [skip_else - skip_then]
        self.ops[skip_else].params = [len(self.ops) - skip_else - 1]
        return results

    def lower_branch(self, node: onnx.NodeProto, branch: onnx.GraphProto, scope: Scope, results: list[Runtime],
                     first: bool) -> list[Any]:
        """Lowers one branch of a run-time If and copies its outputs into the If's outputs (made by the first)."""
        inner: Scope = ChainMap({}, scope)
        self.lower_graph(branch, inner)
        values = [inner[o.name] for o in branch.output]
        if any(isinstance(v, Missing) for v in values):
            return values
        for k, (name, value) in enumerate(zip(node.output, values)):
            dtype, shape = (value.dtype, value.shape) if isinstance(value, Runtime) else \
                (np.asarray(value).dtype.name, np.asarray(value).shape)
            if first:
                results.append(self.arena(name, dtype, shape))
            elif (dtype, tuple(shape)) != (results[k].dtype, results[k].shape):
                raise EdgepackError(
                    f"the branches of If node {node.name!r} give {name!r} different shapes or dtypes at these "
                    f"input shapes ({results[k].dtype}{list(results[k].shape)} and {dtype}{list(shape)})",
                    where=node.name, fix="pin input shapes for which both branches agree")
            self.emit("Copy", [value], [results[k]])
        return values

    def mark(self) -> tuple[int, int, int, int]:
        return len(self.tensors), len(self.ops), len(self.missing), self.scratch

    def rewind(self, mark: tuple[int, int, int, int]) -> None:
        """Forgets what was lowered since `mark` (a branch that failed part way)."""
        tensors, ops, missing, self.scratch = mark
        del self.tensors[tensors:], self.ops[ops:], self.missing[missing:]
        self.aliases = {t: s for t, s in self.aliases.items() if t < tensors}
        self.weights = {k: v for k, v in self.weights.items() if v[0] < tensors}
        self.slots.rewind(tensors)


def _dtype(value: Value | Quantized) -> np.dtype:
    return epk.numpy_dtype(value.dtype) if isinstance(value, (Runtime, Quantized)) else np.asarray(value).dtype


def _shape(value: Value | Quantized) -> tuple[int, ...]:
    return value.shape if isinstance(value, (Runtime, Quantized)) else np.asarray(value).shape


def _uses(graph: onnx.GraphProto) -> dict[str, int]:
    """How many node inputs (in every subgraph too) read each name."""
    counts: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            counts[name] = counts.get(name, 0) + 1
        for attr in node.attribute:
            for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                for name, count in _uses(body).items():
                    counts[name] = counts.get(name, 0) + count
                for out in body.output:
                    counts[out.name] = counts.get(out.name, 0) + 1
    return counts


def _input_shapes(graph: onnx.GraphProto, shapes: dict[str, Sequence[int]]) -> dict[str, tuple[str, tuple[int, ...]]]:
    initializers = {i.name for i in graph.initializer}
    found = {}
    for value in graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name
        if value.name in shapes:
            found[value.name] = (dtype, tuple(int(d) for d in shapes[value.name]))
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
        if None in dims:
            raise EdgepackError(f"input {value.name!r} has symbolic dims {dims} and no concrete shape was given",
                                where=value.name, fix="pass its shape to lower(), e.g. {'x': (1, 3, 640, 640)}")
        found[value.name] = (dtype, tuple(dims))
    return found


def lower_to_plan(model: onnx.ModelProto, shapes: dict[str, Sequence[int]] | None = None,
                  values: dict[str, np.ndarray] | None = None, packed_weights: bool = True,
                  expand_weights: bool = True) -> Plan:
    """The plan of `model` at the given input shapes (dims the model leaves symbolic must be given), and for the
    given `values` of inputs that shape other tensors (NeedsValues names them; the plan guards them); without
    `packed_weights`, only ops WebGPU also runs hold constant weights (no PackedMatMul). With `packed_weights` and
    `expand_weights`, quantized weights become float32 once, when a session opens (the session then holds them as
    float32: the speed of float32 weights, in their memory); else each call dequantizes them."""
    model = rewrite_hard_swish(model, _uses(model.graph))
    model = rewrite_swish(model, _uses(model.graph))
    model = rewrite_gelu(model, _uses(model.graph))
    lowering = Lowering(model, packed_weights, packed_weights and expand_weights)
    scope: Scope = {}
    inputs = []
    for name, (dtype, shape) in _input_shapes(model.graph, shapes or {}).items():
        value = lowering.arena(name, dtype, shape)
        scope[name] = value
        if np.prod(shape) <= MAX_VALUE_ELEMENTS:
            lowering.derived[value.index] = frozenset({name})
        inputs.append(value.index)
        if values and name in values:
            pinned = np.asarray(values[name])
            if (pinned.dtype.name, pinned.shape) != (dtype, shape):
                raise EdgepackError(f"the value given for input {name!r} is {pinned.dtype}{list(pinned.shape)}, not "
                                    f"{dtype}{list(shape)}", where=name, fix="give a value of the input's shape")
            scope[name] = pinned
            lowering.emit("Guard", [value, pinned], [])
    lowering.lower_graph(model.graph, scope)
    if lowering.missing:
        raise MissingKernels(lowering.missing, model.graph.name or "model")
    outputs = []
    for out in model.graph.output:
        value = scope[out.name]
        if not isinstance(value, Runtime) or value.index in inputs or value.index in outputs:
            array = value if not isinstance(value, Runtime) else None
            dtype, shape = (value.dtype, value.shape) if array is None else (np.asarray(array).dtype.name,
                                                                              np.asarray(array).shape)
            copy = lowering.arena(out.name, dtype, shape)
            lowering.emit("Copy", [value], [copy])
            value = copy
        lowering.tensors[value.index].name = out.name
        outputs.append(value.index)
    opened = lowering.slots.open
    ops = [*opened, *without_unread_round_trips(lowering.ops, outputs)]
    arena = plan_arena(lowering.tensors, ops, inputs, outputs, lowering.aliases, len(opened))
    return Plan(lowering.tensors, ops, inputs, outputs, arena, (lowering.scratch + 63) // 64 * 64, len(opened))


def lower(model: onnx.ModelProto, shapes: dict[str, Sequence[int]] | None = None,
          values: dict[str, np.ndarray] | None = None) -> bytes:
    """`.epk` bytes for `model` at the given input shapes (and values of inputs that shape other tensors)."""
    return epk.write(lower_to_plan(model, shapes, values))
