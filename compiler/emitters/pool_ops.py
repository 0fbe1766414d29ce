"""Emitters of MaxPool, AveragePool, LpPool and their global forms (the `Pool` plan op, N-D)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import onnx

from edgepack.runtime.sliding_windows import same_pads

from ..values import attributes
from . import dtype_of, emitter, shape_of, unsupported

if TYPE_CHECKING:
    from ..lower import Lowering

KINDS = {"MaxPool": 0, "GlobalMaxPool": 0, "AveragePool": 1, "GlobalAveragePool": 1, "LpPool": 2, "GlobalLpPool": 2}
MAX_SPATIAL_DIMS = 6


def pool_geometry(node: onnx.NodeProto, spatial: Sequence[int], kernel: Sequence[int]
                  ) -> tuple[list[int], list[int], list[int], list[int]]:
    """strides, pads begin, pads end and dilations per spatial dim, `auto_pad` applied."""
    attrs = attributes(node)
    rank = len(kernel)
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    pads = list(attrs.get("pads", [0] * 2 * rank))
    begin, end = pads[:rank], pads[rank:]
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        amounts = same_pads(spatial, kernel, strides, dilations, upper=auto_pad == "SAME_UPPER")
        begin, end = [b for b, _ in amounts], [e for _, e in amounts]
    elif auto_pad == "VALID":
        begin, end = [0] * rank, [0] * rank
    return strides, begin, end, dilations


def legacy_params(kind: int, include_pad: int, kernel: list[int], geometry: tuple[list[int], ...]) -> list[int]:
    """The 1-D and 2-D float32 form the WGSL kernel reads (a 1-D pool as a 2-D one of unit height)."""
    strides, begin, end, dilations = geometry
    if len(kernel) == 1:
        kernel, strides, begin, end, dilations = [1, *kernel], [1, *strides], [0, *begin], [0, *end], [1, *dilations]
    return [kind, include_pad, *kernel, *strides, *begin, *end, *dilations]


@emitter("MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def emit_pool(lw: Lowering, node: onnx.NodeProto, inputs: list[Any]) -> list[Any]:
    x = inputs[0]
    dtype = dtype_of(x)
    kind = KINDS[node.op_type]
    if dtype != "float32" and not (kind == 0 and dtype in ("int8", "uint8")):
        raise unsupported(node, "float32 only (and int8, uint8 for MaxPool)")
    attrs = attributes(node)
    spatial = list(shape_of(x)[2:])
    if not 1 <= len(spatial) <= MAX_SPATIAL_DIMS:
        raise unsupported(node, f"1 to {MAX_SPATIAL_DIMS} spatial dims only")
    kernel = spatial if node.op_type.startswith("Global") else list(attrs["kernel_shape"])
    geometry = pool_geometry(node, spatial, kernel)
    outputs = lw.outputs(node, inputs[:1])
    outputs = outputs[:2 if len(node.output) > 1 and node.output[1] else 1]
    include_pad = attrs.get("count_include_pad", 0)
    if dtype == "float32" and len(spatial) <= 2 and len(outputs) == 1 and kind < 2:
        params = legacy_params(kind, include_pad, kernel, geometry)
    else:
        params = [kind, include_pad, int(attrs.get("p", 2)), attrs.get("storage_order", 0), len(spatial), *kernel]
        params += [value for values in geometry for value in values]
    lw.emit("Pool", [x], outputs, params)
    return outputs
