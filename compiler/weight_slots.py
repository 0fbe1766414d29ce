"""How quantized weights in an op's weight slots reach the plan: expanded to float32 once, when a session opens (an
ExpandWeight op among the plan's open ops), or kept quantized with their scales, for the op to dequantize at each
call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from edgepack.runtime.native.epk import Op

from .quantized import SLOTS, Quantized, scratch_bytes
from .values import Runtime

if TYPE_CHECKING:
    from .lower import Lowering


class WeightSlots:
    """The weight slots of one lowering: with `expand`, the open ExpandWeight ops made so far (one per weight)."""

    def __init__(self, expand: bool) -> None:
        self.expand = expand
        self.open: list[Op] = []
        self.expanded: dict[int, tuple[Quantized, Runtime]] = {}

    def place(self, lw: Lowering, kind: str, inputs: list[Any], params: list[Any], scratch: int
              ) -> tuple[list[Any], list[Any], int]:
        """Quantized float32 weights in the op's weight slots stay quantized: expanded once at open where the plan
        does that, else the op gets its own inputs, one scale input and (axis, block) per slot, and scratch to
        dequantize into at each call. Any other quantized input becomes floats."""
        own, slots = SLOTS.get(kind, (0, []))
        keep = [k for k in slots
                if k < len(inputs) and isinstance(inputs[k], Quantized) and inputs[k].dtype == "float32"]
        if self.expand:
            inputs = [self.expanded_weight(lw, v) if k in keep else v for k, v in enumerate(inputs)]
            keep = []
        inputs = [np.asarray(v) if isinstance(v, Quantized) and k not in keep else v for k, v in enumerate(inputs)]
        if not keep:
            return inputs, params, scratch
        inputs += [None] * (own - len(inputs))
        for k in slots:
            value = inputs[k] if k in keep else None
            inputs.append(value.scale if value else None)  # None for float16 weights, which have no scale
            params += [value.axis, value.block] if value else [0, 0]
            scratch += scratch_bytes(value, kind) if value else 0
        return inputs, params, scratch

    def expanded_weight(self, lw: Lowering, weight: Quantized) -> Runtime:
        """The float32 arena tensor an open ExpandWeight op makes of `weight` (once per weight)."""
        key = id(weight)
        if key not in self.expanded or self.expanded[key][0] is not weight:
            source = [lw.tensor(weight), *([] if weight.scale is None else [lw.tensor(weight.scale)])]
            out = lw.arena(f"{lw.tensors[source[0]].name}/expanded", "float32", weight.shape)
            self.open.append(Op("ExpandWeight", source, [out.index], [weight.axis, weight.block]))
            self.expanded[key] = (weight, out)
        return self.expanded[key][1]

    def rewind(self, tensors: int) -> None:
        """Forgets the expansions into tensors from index `tensors` on (a branch that failed part way)."""
        self.open = [op for op in self.open if op.outputs[0] < tensors]
        self.expanded = {k: v for k, v in self.expanded.items() if v[1].index < tensors}
