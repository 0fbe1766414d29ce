"""`Session`: load a bundle (or a plain ONNX model), check its feeds, and run each partition on its provider."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgepack.errors import EdgepackError
from edgepack.manifest import MANIFEST, describe_values, read_manifest, real_inputs

from .providers import PROVIDERS

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

    def __init__(self, source: str | Path | onnx.ModelProto, providers: list[str] | None = None) -> None:
        self.providers = list(providers or ["reference"])
        unknown = [p for p in self.providers if p not in PROVIDERS]
        if unknown:
            raise EdgepackError(f"unknown provider {unknown[0]!r}",
                                fix=f"use one of the providers of this version: {', '.join(PROVIDERS)}")
        if isinstance(source, onnx.ModelProto):
            manifest, models = self._plain(source, "model")
        elif Path(source).is_dir() and (Path(source) / MANIFEST).is_file():
            manifest, models = self._bundle(Path(source))
        else:
            from edgepack.loader import load_model

            manifest, models = self._plain(load_model(source).model, str(source))
        self.inputs = [TensorSpec(**v) for v in manifest["inputs"]]
        self.outputs = [TensorSpec(**v) for v in manifest["outputs"]]
        self.partitions = [self._compile(info, models[info["artifact"]]) for info in manifest["partitions"]]

    @staticmethod
    def _plain(model: onnx.ModelProto, name: str) -> tuple[dict[str, Any], dict[str, onnx.ModelProto]]:
        inputs = describe_values(real_inputs(model.graph))
        outputs = describe_values(model.graph.output)
        partition = {"id": "p0", "provider": PORTABLE, "artifact": name,
                     "inputs": [i["name"] for i in inputs], "outputs": [o["name"] for o in outputs]}
        return {"inputs": inputs, "outputs": outputs, "partitions": [partition]}, {name: model}

    @staticmethod
    def _bundle(folder: Path) -> tuple[dict[str, Any], dict[str, onnx.ModelProto]]:
        manifest = read_manifest(folder)
        models = {p["artifact"]: onnx.load(folder / p["artifact"]) for p in manifest["partitions"]}
        return manifest, models

    def _compile(self, info: dict[str, Any], model: onnx.ModelProto) -> _Partition:
        wanted = info["provider"]
        candidates = self.providers if wanted == PORTABLE else [p for p in self.providers if p == wanted]
        if not candidates:
            raise EdgepackError(f"partition {info['id']!r} needs the {wanted!r} provider, which this session lacks",
                                fix=f"add {wanted!r} to the session's providers")
        return _Partition(info, candidates[0], PROVIDERS[candidates[0]](model))

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Outputs by name; feeds are checked against the inputs' names, dtypes and fixed dims first."""
        values = dict(self._checked(feeds))
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
