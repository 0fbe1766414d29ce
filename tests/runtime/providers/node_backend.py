"""An onnx backend (`onnx.backend.base.Backend`) over one edgepack provider, for onnx's node-test runner."""

from __future__ import annotations

import unittest
from typing import Any

import numpy as np
import onnx
import onnx.backend.base

from edgepack.runtime.capability import graph_values, model_opsets
from edgepack.runtime.providers import PROVIDERS, CompiledPartition

NOT_CLAIMED = "not claimed"
"""How a skipped case's reason starts when the provider does not claim its nodes."""


def claim_refusal(provider: str, model: onnx.ModelProto) -> str | None:
    """Why `provider` does not claim every node of `model` (after shape inference), or None."""
    return _refusal(provider, onnx.shape_inference.infer_shapes(model))


def _refusal(provider: str, inferred: onnx.ModelProto) -> str | None:
    return PROVIDERS[provider].capability.graph_refusal(inferred.graph, model_opsets(inferred),
                                                         graph_values(inferred.graph))


class PartitionRep(onnx.backend.base.BackendRep):
    def __init__(self, compiled: CompiledPartition, model: onnx.ModelProto) -> None:
        self.compiled = compiled
        self.inputs = [i.name for i in model.graph.input]
        self.outputs = [o.name for o in model.graph.output]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        values = inputs if isinstance(inputs, dict) else dict(zip(self.inputs, inputs))
        results = self.compiled.run(values)
        return tuple(results[name] for name in self.outputs)


def backend_for(provider: str) -> type[onnx.backend.base.Backend]:
    """A Backend class that runs cases on `provider` and skips, as not claimed, cases with nodes it does not claim."""

    class ProviderBackend(onnx.backend.base.Backend):
        @classmethod
        def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> PartitionRep:
            inferred = onnx.shape_inference.infer_shapes(model)
            reason = _refusal(provider, inferred)
            if reason:
                raise unittest.SkipTest(f"{NOT_CLAIMED} by {provider}: {reason}")
            return PartitionRep(PROVIDERS[provider].compile(inferred, {}), inferred)

        @classmethod
        def supports_device(cls, device: str) -> bool:
            return device == "CPU"

        @classmethod
        def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info: Any = None,
                     **kwargs: Any) -> tuple[np.ndarray, ...]:
            raise unittest.SkipTest("single nodes run as models in this backend")

    ProviderBackend.__name__ = f"{provider.capitalize()}Backend"
    return ProviderBackend
