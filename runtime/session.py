"""`Session`: load a bundle (or a plain ONNX model), check its feeds, and run each partition on its provider."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import external_data_helper

from .bundle_format import MANIFEST, describe_values, read_manifest, real_inputs
from .errors import EdgepackError
from .external_weights import mapped_initializers, mapped_weights, weights_as_inputs
from .providers import PROVIDERS, Provider

PORTABLE = "onnx"
"""A partition that is plain ONNX: any provider may run it."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    shape: list[int | str | None] | None


@dataclass
class _Partition:
    info: dict[str, Any]
    provider: str
    compiled: Any


class Session:
    """Runs a bundle folder, an .onnx file or a ModelProto: `Session(path).run({"x": array})`."""

    def __init__(self, source: str | Path | onnx.ModelProto, providers: list[str] | None = None,
                 provider_options: dict[str, dict[str, Any]] | None = None, full_precision: bool = False,
                 threads: int | None = None, manifest: dict[str, Any] | None = None, stand_ins: bool = False,
                 weights: Path | None = None) -> None:
        """`providers`: the providers this session may use (default: each partition's own, `reference` for plain
        ONNX). `provider_options`: per provider, options that override the bundle's (e.g. `{"openvino":
        {"inference_precision": "fp32", "threads": 1}}`). `full_precision`: every provider computes in fp32 where it
        would lower precision on its own (OpenVINO's bf16 on AMX CPUs). `threads`: the thread count of providers
        that take one. `manifest`: with a bundle folder, its manifest's `inputs`, `outputs` and `partitions` when
        `manifest.json` is not written yet (the build's verify stage runs the bundle before it assembles that).
        `stand_ins`: a partition of a provider that runs under emulation here (`neon`) runs its own artefact on that
        provider's host stand-in (`cpu`) instead; `stood_in` lists those partitions' ids. `weights`: with a ModelProto
        whose initializers are external data, the folder of their files. External weights stay mapped from disk on
        `reference`; other providers read them in."""
        self._running = threading.Lock()
        self.requested = list(providers) if providers else None
        self.provider_options = provider_options or {}
        self.full_precision = full_precision
        self.threads = threads
        self.stand_ins = stand_ins
        self.stood_in: list[str] = []
        for name in [*(self.requested or []), *self.provider_options]:
            self._usable(name)
        self.folder: Path | None = None
        self.weights = weights
        if isinstance(source, onnx.ModelProto):
            manifest, models = self._plain(source, "model"), {"model": source}
        elif manifest is not None:
            self.folder, models = Path(source), {}
        elif Path(source).is_dir() and (Path(source) / MANIFEST).is_file():
            self.folder = Path(source)
            manifest, models = read_manifest(self.folder), {}
        else:
            from .model_file import load_model

            loaded = load_model(source, map_weights=True)
            model, self.weights = loaded.model, loaded.weights
            manifest, models = self._plain(model, str(source)), {str(source): model}
        self.manifest = manifest
        self.inputs = [TensorSpec(**v) for v in manifest["inputs"]]
        self.outputs = [TensorSpec(**v) for v in manifest["outputs"]]
        self.partitions = [self._compile(info, models) for info in manifest["partitions"]]

    @staticmethod
    def _usable(name: str) -> None:
        if name not in PROVIDERS:
            raise EdgepackError(f"unknown provider {name!r}",
                                fix=f"use one of the providers of this version: {', '.join(PROVIDERS)}")
        reason = PROVIDERS[name].missing()
        if reason:
            raise EdgepackError(f"the {name!r} provider cannot run here: {reason}",
                                fix=f"install what it needs, or run the bundle without {name!r}")

    @staticmethod
    def _plain(model: onnx.ModelProto, name: str) -> dict[str, Any]:
        graph = model.graph
        inputs = describe_values(real_inputs(graph))
        outputs = describe_values(graph.output)
        partition = {"id": "p0", "provider": PORTABLE, "artifact": name,
                     "inputs": [i["name"] for i in inputs], "outputs": [o["name"] for o in outputs]}
        return {"inputs": inputs, "outputs": outputs, "partitions": [partition]}

    def _provider_for(self, info: dict[str, Any]) -> str:
        wanted = info["provider"]
        if wanted == PORTABLE:
            return (self.requested or ["reference"])[0]
        if self.requested is None or wanted in self.requested:
            return wanted
        if _onnx_artifact(info) is not None:
            return self.requested[0]
        raise EdgepackError(f"partition {info['id']!r} is {wanted!r} IR ({info['artifact']}) and only the {wanted!r} "
                            f"provider runs it; this session has {self.requested}",
                            fix=f"add {wanted!r} to the session's providers")

    def _compile(self, info: dict[str, Any], models: dict[str, onnx.ModelProto]) -> _Partition:
        name = self._provider_for(info)
        own = name == info["provider"]
        stand_in = PROVIDERS[name].host_stand_in if self.stand_ins and own else None
        if stand_in and PROVIDERS[stand_in].missing() is None and not info["artifact"].endswith(".onnx"):
            name = stand_in
            self.stood_in.append(info["id"])
        self._usable(name)
        provider = PROVIDERS[name]
        options = {**info.get("options", {}), **self._session_options(provider),
                   **self.provider_options.get(name, {})}
        artifact = info["artifact"] if own else _onnx_artifact(info) or info["artifact"]
        if artifact in models:
            return _Partition(info, name, self._compiled(provider, models[artifact], options, self.weights))
        path = self.folder / artifact
        if artifact.endswith(".onnx"):
            model = onnx.load(path, load_external_data=False)
            return _Partition(info, name, self._compiled(provider, model, options, self.folder))
        if provider.load is None:
            raise EdgepackError(f"the {name!r} provider cannot load {artifact}", where=str(path),
                                fix="rebuild the bundle for a profile whose providers this session has")
        return _Partition(info, name, provider.load(path, options))

    @staticmethod
    def _compiled(provider: Provider, model: onnx.ModelProto, options: dict[str, Any], weights: Path | None) -> Any:
        """`model` compiled on `provider`; external initializers (in `weights`) mapped and fed on `reference`, read
        into a copy of the model elsewhere."""
        if not mapped_initializers(model):
            return provider.compile(model, options)
        if weights is None:
            raise EdgepackError(f"the model {model.graph.name!r} keeps its weights in external data files, and this "
                                "session was not told their folder", fix="pass weights=FOLDER to Session")
        if provider.name == "reference":
            return _WithMappedWeights(provider.compile(weights_as_inputs(model), options),
                                      mapped_weights(model, weights))
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        external_data_helper.load_external_data_for_model(copy, str(weights))
        return provider.compile(copy, options)

    def _session_options(self, provider: Provider) -> dict[str, Any]:
        """The options this session's `full_precision` and `threads` ask of `provider`."""
        options = dict(provider.full_precision) if self.full_precision else {}
        if self.threads is not None and provider.thread_option is not None:
            options[provider.thread_option] = self.threads
        return options

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name; feeds are checked against the inputs' names, dtypes and fixed dims first. A session may
        be called from several threads: its runs take turns (a partition's memory holds one run at a time); for
        runs in parallel, open one session per thread."""
        values = dict(self._checked(feeds))
        with self._running:
            for partition in self.partitions:
                outputs = partition.compiled.run({name: values[name] for name in partition.info["inputs"]})
                values.update(outputs)
        return {spec.name: values[spec.name] for spec in self.outputs}

    def _checked(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        expected = {spec.name: spec for spec in self.inputs}
        missing = [n for n in expected if n not in feeds]
        extra = [n for n in feeds if n not in expected]
        if missing or extra:
            raise EdgepackError(f"feeds do not match the inputs: missing {missing or 'none'}, unexpected "
                                f"{extra or 'none'}", fix=f"feed exactly the inputs {list(expected)}")
        checked = {}
        for name, spec in expected.items():
            array = np.asarray(feeds[name])
            where = f"input {name!r}"
            if array.dtype.name != spec.dtype:
                raise EdgepackError(f"input {name!r} must be {spec.dtype}, got {array.dtype.name}", where=where,
                                    fix=f"convert it, e.g. array.astype(np.{spec.dtype})")
            if spec.shape is not None:
                if array.ndim != len(spec.shape):
                    raise EdgepackError(f"input {name!r} must have rank {len(spec.shape)} {spec.shape}, got shape "
                                        f"{list(array.shape)}", where=where, fix="reshape the array")
                for axis, (want, got) in enumerate(zip(spec.shape, array.shape)):
                    if isinstance(want, int) and want != got:
                        raise EdgepackError(f"input {name!r} must have size {want} on axis {axis}, got {got} "
                                            f"(shape {list(array.shape)})", where=where,
                                            fix=f"feed an array of shape {spec.shape}")
            checked[name] = array
        return checked


class _WithMappedWeights:
    """A partition compiled with its external weights as inputs, fed each run from their mappings."""

    def __init__(self, compiled: Any, weights: dict[str, np.ndarray]) -> None:
        self.compiled, self.weights = compiled, weights

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.compiled.run({**feeds, **self.weights})


def _onnx_artifact(info: dict[str, Any]) -> str | None:
    """The partition as ONNX, which any provider may run: its artefact, or the graph a plan partition keeps beside
    its plan (`onnx`, the C library's)."""
    return info["artifact"] if info["artifact"].endswith(".onnx") else info.get("onnx")
