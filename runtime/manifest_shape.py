"""The structure of a bundle manifest's fields that the runtime reads, checked before any is used: a manifest that
was edited or damaged is one user error naming the field, never a TypeError deep inside a session. Every file a
partition loads must be one of the manifest's artefacts (whose sha256s are checked), so no path leaves the bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import EdgepackError


class MalformedManifest(Exception):
    """A field of the manifest that is not what the format says (its path and what it should be)."""


def check_manifest_shape(manifest: dict[str, Any], where: Path) -> None:
    try:
        artifacts = _mapping(manifest, "artifacts")
        for name, info in artifacts.items():
            _string(info if isinstance(info, dict) else {}, "sha256", f"artifacts[{name!r}]")
        _string(manifest, "target")
        _string(_mapping(manifest, "profile"), "name", "profile")
        for key in ("inputs", "outputs"):
            for index, spec in enumerate(_list(manifest, key)):
                _tensor_spec(spec, f"{key}[{index}]")
        partitions = _list(manifest, "partitions")
        if not partitions:
            raise MalformedManifest("partitions must list at least one partition")
        for index, part in enumerate(partitions):
            _partition(part, f"partitions[{index}]", artifacts)
    except MalformedManifest as error:
        raise EdgepackError(f"the bundle manifest is malformed: {error}", where=str(where),
                            fix="rebuild the bundle with `edgepack build --force` (the manifest was edited or "
                                "damaged)") from None


def _mapping(parent: dict[str, Any], key: str, path: str = "") -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise MalformedManifest(f"{_at(path, key)} must be an object, not {_shown(value)}")
    return value


def _list(parent: dict[str, Any], key: str, path: str = "") -> list[Any]:
    value = parent.get(key)
    if not isinstance(value, list):
        raise MalformedManifest(f"{_at(path, key)} must be a list, not {_shown(value)}")
    return value


def _string(parent: dict[str, Any], key: str, path: str = "") -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise MalformedManifest(f"{_at(path, key)} must be a non-empty string, not {_shown(value)}")
    return value


def _tensor_spec(spec: Any, path: str) -> None:
    if not isinstance(spec, dict) or set(spec) != {"name", "dtype", "shape"}:
        raise MalformedManifest(f"{path} must be an object of name, dtype and shape, not {_shown(spec)}")
    _string(spec, "name", path)
    _string(spec, "dtype", path)
    shape = spec["shape"]
    if shape is not None and not (isinstance(shape, list) and all(
            (isinstance(d, int) and not isinstance(d, bool) and d >= 0) or isinstance(d, str) or d is None
            for d in shape)):
        raise MalformedManifest(f"{path}.shape must be null or a list of sizes and dim names, not {_shown(shape)}")


def _partition(part: Any, path: str, artifacts: dict[str, Any]) -> None:
    if not isinstance(part, dict):
        raise MalformedManifest(f"{path} must be an object, not {_shown(part)}")
    if not isinstance(part.get("id"), (str, int)) or isinstance(part.get("id"), bool):
        raise MalformedManifest(f"{path}.id must be a string or a number, not {_shown(part.get('id'))}")
    _string(part, "provider", path)
    for key in ("artifact", "onnx"):
        if key in part or key == "artifact":
            name = _string(part, key, path)
            if name not in artifacts and not any(other.startswith(f"{name}/") for other in artifacts):
                raise MalformedManifest(f"{path}.{key} {name!r} is not one of the bundle's artefacts")
    for key in ("inputs", "outputs"):
        names = _list(part, key, path)
        if not all(isinstance(name, str) for name in names):
            raise MalformedManifest(f"{path}.{key} must be a list of tensor names, not {_shown(names)}")
    if "options" in part and not isinstance(part["options"], dict):
        raise MalformedManifest(f"{path}.options must be an object, not {_shown(part['options'])}")


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
