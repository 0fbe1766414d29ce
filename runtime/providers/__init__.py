"""The registry of execution providers. A provider is a module of this package that calls `register`; adding one
is adding its file and its name to `MODULES`. A provider's module is imported the first time its name is looked
up, so a session that runs a CPU bundle never imports OpenVINO's or CoreML's converters."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import EdgepackError

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from ..capability import Capability


class CompiledPartition(Protocol):
    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


Options = Mapping[str, Any]


@dataclass(frozen=True)
class Provider:
    name: str
    summary: str
    capability: Capability
    compile: Callable[[onnx.ModelProto, Options], CompiledPartition]
    """Compiles an ONNX partition."""
    load: Callable[[Path, Options], CompiledPartition] | None = None
    """Loads an artefact in the provider's own format (None: the provider only takes ONNX)."""
    missing: Callable[[], str | None] = lambda: None
    """Why the provider cannot run on this machine (a package not installed), or None."""
    full_precision: Options = field(default_factory=dict)
    """Options under which it computes in fp32 where it would otherwise lower precision (OpenVINO defaults to bf16
    on AMX CPUs); a session asked for `full_precision` (the verify stage's) passes them."""
    thread_option: str | None = None
    """The option that sets how many threads it computes on, for a session given `threads`; None: one thread."""
    host_stand_in: str | None = None
    """A provider that runs this one's artefacts as they are, natively on this host (the same `.epk` plan on the host
    build of the core), where this one runs them under emulation: a session asked for `stand_ins` uses it."""


MODULES = ("reference", "cpu", "neon", "wasm", "webgpu", "openvino", "coreml")
"""The provider modules of this package, in the order `edgepack profiles` and errors list them."""


class Registry(Mapping[str, Provider]):
    """Provider name -> Provider, importing a provider's module on first lookup."""

    def __init__(self) -> None:
        self._registered: dict[str, Provider] = {}

    def __getitem__(self, name: str) -> Provider:
        if name not in self._registered and name in MODULES:
            importlib.import_module(f"{__name__}.{name}")
        return self._registered[name]

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)

    def __contains__(self, name: object) -> bool:
        return name in MODULES

    def add(self, provider: Provider) -> None:
        if provider.name in self._registered:
            raise ValueError(f"provider {provider.name!r} registered twice")
        if provider.name not in MODULES:
            raise ValueError(f"provider {provider.name!r} is not a module named in MODULES")
        self._registered[provider.name] = provider


PROVIDERS = Registry()


def register(provider: Provider) -> Provider:
    PROVIDERS.add(provider)
    return provider


def thread_count(options: Options, provider: str) -> int:
    """A session's `threads` option for `provider` (1 when not given): how many threads its core runs on."""
    threads = options.get("threads")
    threads = 1 if threads is None else int(threads)
    if threads < 1:
        raise EdgepackError(f"threads must be 1 or more, not {threads}", where=f"the {provider} provider's options",
                            fix="pass threads=1 (one thread) or more")
    return threads
