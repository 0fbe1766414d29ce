"""Read an ONNX model file safely: a clear error for what is not a model, external data kept inside the model's
folder."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from .errors import EdgepackError
from .external_weights import external_tensors, keep_weights_external, mapped_initializers, tensor_bytes
from .wire import diagnose


@dataclass(frozen=True)
class SourceModel:
    model: onnx.ModelProto
    path: Path
    sha256: str
    bytes: int
    weights: Path | None = None
    """The folder whose data files hold the main graph's initializers, which stay external (mapped, never read into
    memory); None where the model holds its weights."""


def resolve_model_path(path: str | Path) -> Path:
    """The .onnx file named by `path`, which may be the file or a folder holding exactly one."""
    path = Path(path)
    if not path.exists():
        raise EdgepackError(f"model file {str(path)!r} does not exist", where=str(path.absolute()),
                            fix="check the path, or fetch the sample models with `edgepack samples`")
    if path.is_dir():
        found = sorted(path.glob("*.onnx"))
        if len(found) != 1:
            listing = ", ".join(p.name for p in found) or "none"
            raise EdgepackError(f"folder {str(path)!r} must hold exactly one .onnx file, it holds: {listing}",
                                where=str(path.absolute()), fix="pass the .onnx file itself")
        return found[0]
    return path


def load_model(path: str | Path, map_weights: bool = False) -> SourceModel:
    """Read an ONNX model and its external data; every user error is an EdgepackError. With `map_weights` the main
    graph's external initializers stay external (`SourceModel.weights` names their folder)."""
    path = resolve_model_path(path)
    data = path.read_bytes()
    model = _parse(data, path)
    kept = _load_external_data(model, path, map_weights)
    return SourceModel(model, path, hashlib.sha256(data).hexdigest(), len(data),
                       path.parent.resolve() if kept else None)


PROTOBUF_LIMIT = 2**31 - 1
"""The most bytes a protobuf message may serialize to: a model past it can only keep its weights external."""


def with_weights_read(source: SourceModel, needs: str) -> SourceModel:
    """`source` with its external weights read into its proto, for a build whose artefacts hold them (`needs`
    names that build); a model that would pass protobuf's limit that way is refused."""
    if source.weights is None:
        return source
    total = source.model.ByteSize() + sum(tensor_bytes(t) for t in mapped_initializers(source.model))
    if total > PROTOBUF_LIMIT:
        raise EdgepackError(f"{source.path.name!r} has {total / 1e9:.2f} GB of weights in external data, over the 2 GB "
                            f"a model held in memory may have, and {needs} holds its weights in memory",
                            where=str(source.path), fix="build it with --profile generic, whose bundle keeps the "
                                                        "weights in a data file of its own")
    external_data_helper.load_external_data_for_model(source.model, str(source.weights))
    return SourceModel(source.model, source.path, source.sha256, source.bytes)


def _parse(data: bytes, path: Path) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except DecodeError:
        if diagnose(data) == "truncated":
            raise EdgepackError(f"model file {path.name!r} is truncated: it ends in the middle of a protobuf field "
                                f"after {len(data)} bytes", where=str(path),
                                fix="the file was cut short while copying or downloading; fetch or export it again")
        raise EdgepackError(f"{path.name!r} is not an ONNX model: it is not a protobuf file", where=str(path),
                            fix="pass a .onnx file exported by torch.onnx, tf2onnx, paddle2onnx or similar") from None
    if not model.HasField("graph") or model.ir_version == 0:
        raise EdgepackError(f"{path.name!r} is not an ONNX model: it has no graph or no IR version", where=str(path),
                            fix="pass a .onnx file exported by torch.onnx, tf2onnx, paddle2onnx or similar")
    return model


def _load_external_data(model: onnx.ModelProto, path: Path, map_weights: bool) -> bool:
    """Check every external reference, then read the data in (all of it, or with `map_weights` all but the main
    graph's initializers); whether some stay external."""
    folder = path.parent.resolve()
    for tensor in external_tensors(model):
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        where = f"tensor {tensor.name!r} in {path.name}"
        fix = "keep external data files in the model's folder and refer to them by a relative path"
        if not location or os.path.isabs(location) or re.match(r"^[A-Za-z]:", location) or location.startswith("\\"):
            raise EdgepackError(f"external data location {location!r} is not a relative path", where=where, fix=fix)
        target = (folder / location).resolve()
        if not target.is_relative_to(folder):
            raise EdgepackError(f"external data location {location!r} leaves the model's folder {str(folder)!r}",
                                where=where, fix=fix)
        if not target.is_file():
            raise EdgepackError(f"external data file {location!r} does not exist next to the model",
                                where=where, fix="copy the model together with its external data files")
        offset, length = int(info.get("offset", 0) or 0), info.get("length")
        size = target.stat().st_size
        if offset > size or (length is not None and offset + int(length) > size):
            raise EdgepackError(f"external data for this tensor lies beyond the end of {location!r} ({size} bytes)",
                                where=where, fix="the external data file is truncated or stale; export the model again")
    if map_weights:
        keep_weights_external(model, folder)
        return bool(mapped_initializers(model))
    if external_tensors(model):
        external_data_helper.load_external_data_for_model(model, str(folder))
    return False
