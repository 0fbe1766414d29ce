"""The bundle format a runtime reads: `manifest.json` (what a bundle holds, where it came from, the sha256 of each
file), checked before anything runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import onnx

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.manifest_shape import check_manifest_shape

FORMAT = "edgepack-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def dtype_name(elem_type: int) -> str:
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(elem_type).name
    except (KeyError, TypeError, ValueError):
        return onnx.TensorProto.DataType.Name(elem_type).lower()


def real_inputs(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs a caller feeds: old exporters also list initializers as inputs."""
    initializers = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in initializers]


def describe_values(values: Any) -> list[dict[str, Any]]:
    """Name, dtype and shape (ints for fixed dims, names for symbolic ones, null for unknown)."""
    described = []
    for value in values:
        tensor = value.type.tensor_type
        shape = None
        if tensor.HasField("shape"):
            shape = [_dim(d) for d in tensor.shape.dim]
        described.append({"name": value.name, "dtype": dtype_name(tensor.elem_type), "shape": shape})
    return described


def _dim(dim: onnx.TensorShapeProto.Dimension) -> int | str | None:
    """A fixed size, a symbolic name, or None when unknown (exporters write -1 for that)."""
    if dim.HasField("dim_value"):
        return dim.dim_value if dim.dim_value >= 0 else None
    return dim.dim_param or None


def read_manifest(bundle: Path, verify: bool = True) -> dict[str, Any]:
    """The manifest of a bundle folder, after checking its format version and every artefact's sha256."""
    path = bundle / MANIFEST
    if not path.is_file():
        raise EdgepackError(f"{str(bundle)!r} is not an edgepack bundle: it has no {MANIFEST}", where=str(bundle),
                            fix="pass a folder written by `edgepack build`")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EdgepackError(f"the bundle manifest is not valid JSON: {exc}", where=str(path),
                            fix="rebuild the bundle with `edgepack build --force`") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EdgepackError(f"{MANIFEST} is not an edgepack bundle manifest", where=str(path),
                            fix="pass a folder written by `edgepack build`")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise EdgepackError(
            f"bundle format version {manifest.get('format_version')!r} is not supported (this edgepack reads "
            f"version {FORMAT_VERSION})", where=str(path), fix="rebuild the bundle with this version of edgepack")
    check_manifest_shape(manifest, path)
    if verify:
        verify_artifacts(bundle, manifest)
    return manifest


def verify_artifacts(bundle: Path, manifest: dict[str, Any]) -> None:
    for rel, info in sorted(manifest.get("artifacts", {}).items()):
        path = (bundle / rel).resolve()
        if not path.is_relative_to(bundle.resolve()):
            raise EdgepackError(f"artefact path {rel!r} leaves the bundle folder", where=str(bundle / MANIFEST),
                                fix="the manifest was tampered with; rebuild the bundle")
        if not path.is_file():
            raise EdgepackError(f"artefact {rel!r} is missing from the bundle", where=str(bundle),
                                fix="copy the whole bundle folder, or rebuild it")
        actual = sha256_file(path)
        if actual != info.get("sha256"):
            raise EdgepackError(f"artefact {rel!r} does not match its sha256 in the manifest "
                                f"(expected {str(info.get('sha256'))[:12]}..., found {actual[:12]}...)",
                                where=str(path), fix="the file was changed or corrupted; rebuild the bundle")
