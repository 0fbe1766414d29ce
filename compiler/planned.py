"""A compiled ONNX partition that runs as `.epk` plans: one plan per input-shape signature (and per value of the
inputs that shape other tensors, if any), lowered on the first run at those shapes and kept for later runs. Providers
differ only in how a plan is opened and run; the runtime's C core providers reach this class through the
`edgepack.plan_compilers` entry point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
import onnx

from .lower import NeedsValues, lower

Signature = tuple[tuple[str, str, tuple[int, ...]], ...]
Values = tuple[tuple[str, bytes], ...]


class PlanRunner(Protocol):
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


class PlannedPartition:
    def __init__(self, model: onnx.ModelProto, open_plan: Callable[[bytes, onnx.ModelProto], PlanRunner]) -> None:
        self.model = model
        self.open_plan = open_plan
        self.output_names = [o.name for o in model.graph.output]
        self.sessions: dict[tuple[Signature, Values], PlanRunner] = {}
        self.value_inputs: set[str] = set()
        """Inputs that shape other tensors: a plan is lowered (and guarded) per value of them."""

    def session_for(self, feeds: dict[str, np.ndarray]) -> PlanRunner:
        signature = tuple((name, value.dtype.name, value.shape) for name, value in sorted(feeds.items()))
        values = {name: feeds[name] for name in sorted(self.value_inputs) if name in feeds}
        key = (signature, tuple((name, value.tobytes()) for name, value in values.items()))
        if key not in self.sessions:
            try:
                plan = lower(self.model, {name: shape for name, _, shape in signature}, values)
            except NeedsValues as needed:
                if not set(needed.names) - self.value_inputs or not set(needed.names) <= set(feeds):
                    raise
                self.value_inputs |= set(needed.names)
                return self.session_for(feeds)
            self.sessions[key] = self.open_plan(plan, self.model)
        return self.sessions[key]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {name: np.asarray(value) for name, value in feeds.items()}
        outputs = self.session_for(feeds).run(feeds)
        return {name: outputs[name] for name in self.output_names}
