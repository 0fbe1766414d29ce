"""The .onnx a bundle was built from: given (its sha256 checked against the manifest's record), or found by that
sha256 beside the bundle, in the working folder or in the sample cache. Peers (onnxruntime, OpenVINO,
onnxruntime-web) and a web bundle's reference check run it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgepack.runtime.bundle_format import MANIFEST, read_manifest, sha256_file
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.model_file import resolve_model_path


def peer_model_path(model: Path, source: str | Path | None) -> Path:
    """The .onnx onnxruntime runs: `source` if given, else the model itself; a bundle needs `source`."""
    if not (model.is_dir() and (model / MANIFEST).is_file()):
        return resolve_model_path(source if source is not None else model)
    manifest = read_manifest(model, verify=False)
    recorded = manifest.get("source", {})
    if source is None:
        return find_source(model, manifest, None)
    path = resolve_model_path(source)
    if recorded.get("sha256") and sha256_file(path) != recorded["sha256"]:
        raise EdgepackError(f"--source {str(path)!r} is not the model this bundle was built from (its sha256 differs "
                            f"from the manifest's source {recorded.get('file', '?')!r})", where=str(path.absolute()),
                            fix="pass the .onnx the bundle was built from")
    return path


def find_source(folder: Path, manifest: dict[str, Any], source: str | Path | None) -> Path:
    """The .onnx the bundle was built from: `source`, else the file the manifest names (same sha256) beside the
    bundle or in the sample cache."""
    recorded = manifest.get("source", {})
    if source is not None:
        path = Path(source)
        if not path.is_file():
            raise EdgepackError(f"--source {str(source)!r} is not a file", where=str(path.absolute()),
                                fix="pass the .onnx the bundle was built from")
        if recorded.get("sha256") and sha256_file(path) != recorded["sha256"]:
            raise EdgepackError(f"--source {str(path)!r} is not the model this bundle was built from (its sha256 "
                                f"differs from the manifest's source {recorded.get('file', '?')!r})",
                                where=str(path.absolute()), fix="pass the .onnx the bundle was built from")
        return path
    name = recorded.get("file")
    if name and recorded.get("sha256"):
        from edgepack.samples import cache_dir

        for root in (folder.parent, folder.parent.parent, Path.cwd()):
            candidate = root / name
            if candidate.is_file() and sha256_file(candidate) == recorded["sha256"]:
                return candidate
        if cache_dir().is_dir():
            for candidate in cache_dir().rglob(name):
                if candidate.is_file() and sha256_file(candidate) == recorded["sha256"]:
                    return candidate
    raise EdgepackError(f"the source model of {str(folder)!r} ({name or '?'}) was not found beside the bundle, in "
                        "the working folder or in the sample cache with the manifest's sha256: the peer (and a web "
                        "bundle's reference check) run the source model", where=str(folder.absolute()),
                        fix="pass the .onnx the bundle was built from with --source PATH")
