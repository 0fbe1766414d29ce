"""Lowering a partition to an `.epk` plan at pinned input shapes, for the targets that ship plans (embedded, web),
with errors that name the dims to pin or the nodes the C core cannot run."""

from __future__ import annotations

import onnx

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.epk import Plan
from edgepack.runtime.native.lower import lower_to_plan
from edgepack.runtime.native.lower_ops import EMITTERS

LOWERED_IN_PLACE = ("If", "Shape", "Size")
"""Ops the lowering handles itself rather than through an emitter."""


def pinned_shapes(model: onnx.ModelProto, product: str) -> dict[str, tuple[int, ...]]:
    """Each input's concrete shape; a symbolic or unknown dim is an error that says how to pin it."""
    initializers = {t.name for t in model.graph.initializer}
    shapes: dict[str, tuple[int, ...]] = {}
    loose: dict[str, str] = {}
    for value in model.graph.input:
        tensor_type = value.type.tensor_type
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
        if not tensor_type.HasField("shape"):
            loose[value.name] = "(no shape)"
        elif any(isinstance(d, str) for d in dims):
            loose[value.name] = str(dims)
        else:
            shapes[value.name] = tuple(dims)
    if loose:
        described = ", ".join(f"{name} {dims}" for name, dims in loose.items())
        example = " ".join(f"--input-shape {name}=..." for name in loose)
        raise EdgepackError(f"{product} runs at fixed input shapes, and {described} still "
                            f"{'has' if len(loose) == 1 else 'have'} dynamic dims", where=product,
                            fix=f"pass the shapes it will run at, e.g. {example} with the dims as comma-separated "
                                "integers (1,3,640,640), or pin the dims in the profile's [shapes] table")
    return shapes


def node_label(node: onnx.NodeProto) -> str:
    """How the lowering names a node in its errors: `OpType (name)`."""
    return f"{node.op_type} ({node.name or node.output[0]})"


def missing_nodes(graph: onnx.GraphProto, message: str) -> list[str]:
    """The nodes a lowering error names as missing, then the nodes after them with no kernel either: the lowering
    stops at the first node of a chain, since what reads its outputs is never reached."""
    reported, unreached, tainted = [], [], set()
    for node in graph.node:
        label = node_label(node)
        if label in message:
            reported.append(label)
        elif any(name in tainted for name in node.input):
            if node.op_type not in EMITTERS and node.op_type not in LOWERED_IN_PLACE:
                unreached.append(label)
        else:
            continue
        tainted.update(node.output)
    return reported + unreached


def lowered(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]], product: str) -> Plan:
    """The plan; when the core cannot run some nodes, the build fails listing them and their ops."""
    try:
        return lower_to_plan(model, shapes)
    except EdgepackError as error:
        missing = missing_nodes(model.graph, error.what)
        if not missing:
            raise EdgepackError(f"{product} cannot be built: {error.what}", where=error.where,
                                fix=error.fix) from error
        ops = sorted({entry.split(" (")[0] for entry in missing})
        raise EdgepackError(f"{product} cannot be built: the C core has no kernel for {', '.join(ops)}, used by "
                            f"{len(missing)} node(s): {', '.join(missing)}", where=model.graph.name or "model",
                            fix="replace these nodes with ops the core has (runtime/native/EPK.md lists them), or "
                                "build with a profile whose providers run them") from error
