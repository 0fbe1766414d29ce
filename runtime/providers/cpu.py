"""The `cpu` provider: the compact C core built for this host, run through ctypes. A partition is lowered to an
`.epk` plan per input-shape signature (the first run at new shapes lowers and opens a plan; later runs reuse it)."""

from __future__ import annotations

import shutil

import numpy as np
import onnx

from ..capability import Capability
from ..native.binding import NativeSession
from ..native.lower import lower
from . import Options, Provider, register
from .cpu_claims import CLAIMS

Signature = tuple[tuple[str, str, tuple[int, ...]], ...]


class CpuPartition:
    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.output_names = [o.name for o in model.graph.output]
        self.sessions: dict[Signature, NativeSession] = {}

    def session_for(self, feeds: dict[str, np.ndarray]) -> NativeSession:
        signature = tuple((name, np.asarray(v).dtype.name, np.shape(v)) for name, v in sorted(feeds.items()))
        if signature not in self.sessions:
            plan = lower(self.model, {name: shape for name, _, shape in signature})
            self.sessions[signature] = NativeSession(plan)
        return self.sessions[signature]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = {name: np.asarray(value) for name, value in feeds.items()}
        outputs = self.session_for(feeds).run(feeds)
        return {name: outputs[name] for name in self.output_names}


def compile_partition(model: onnx.ModelProto, options: Options) -> CpuPartition:
    return CpuPartition(model)


def _missing() -> str | None:
    if not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler is installed to build the runtime core (apt-get install gcc)"
    return None


PROVIDER = register(Provider("cpu", "the compact C runtime core built for this host (ctypes)",
                             Capability(CLAIMS), compile_partition, missing=_missing))
