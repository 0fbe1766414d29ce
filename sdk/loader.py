"""Load and check a model: external data kept inside the model's folder, checker, strict shape inference."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper, shape_inference

from edgepack.packager.graphs import iter_graph_protos

from .errors import EdgepackError
from .wire import diagnose

STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training")
SHAPE_FIX = "check --input-shape and the profile's shape pins against the model's inputs (`edgepack inspect MODEL`)"


@dataclass(frozen=True)
class SourceModel:
    model: onnx.ModelProto
    path: Path
    sha256: str
    bytes: int


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


def load_model(path: str | Path) -> SourceModel:
    """Read an ONNX model and its external data; every user error is an EdgepackError."""
    path = resolve_model_path(path)
    data = path.read_bytes()
    model = _parse(data, path)
    _load_external_data(model, path)
    return SourceModel(model, path, hashlib.sha256(data).hexdigest(), len(data))


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


def _external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    tensors: list[onnx.TensorProto] = []
    for graph in iter_graph_protos(model.graph):
        tensors.extend(graph.initializer)
        for node in graph.node:
            tensors.extend(a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    return [t for t in tensors if external_data_helper.uses_external_data(t)]


def _load_external_data(model: onnx.ModelProto, path: Path) -> None:
    folder = path.parent.resolve()
    for tensor in _external_tensors(model):
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
    if _external_tensors(model):
        external_data_helper.load_external_data_for_model(model, str(folder))


def check_model(model: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """Known ops only, onnx.checker (full), then strict shape inference; returns the inferred model."""
    _check_ops(model, where)
    _forget_negative_dims(model)
    try:
        onnx.checker.check_model(model, full_check=True)
    except shape_inference.InferenceError as exc:
        raise EdgepackError(f"shapes do not fit: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix=SHAPE_FIX) from None
    except onnx.checker.ValidationError as exc:
        raise EdgepackError(f"the model is not valid ONNX: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix="re-export the model with a current exporter (the checker names the field or node "
                                "at fault)") from None
    return infer_shapes(model, where)


def infer_shapes(model: onnx.ModelProto, where: str) -> onnx.ModelProto:
    """Strict shape inference; a contradiction is the user's shape or a broken model."""
    try:
        return shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except (shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        raise EdgepackError(f"shapes do not fit: {_first_line(exc)}", where=_node_of(exc) or where,
                            fix=SHAPE_FIX) from None


def _forget_negative_dims(model: onnx.ModelProto) -> None:
    """Exporters (paddle2onnx) write -1 for an unknown size; ONNX means a dimension with no value by that."""
    for graph in iter_graph_protos(model.graph):
        for info in (*graph.input, *graph.output, *graph.value_info):
            for dim in info.type.tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    dim.ClearField("dim_value")


def _check_ops(model: onnx.ModelProto, where: str) -> None:
    local = {(f.domain, f.name) for f in model.functions}
    for graph in iter_graph_protos(model.graph):
        for node in graph.node:
            if (node.domain, node.op_type) in local:
                continue
            domain = "" if node.domain == "ai.onnx" else node.domain
            node_where = f"node {node.name or '(unnamed)'!r}, {where}"
            if domain not in STANDARD_DOMAINS:
                raise EdgepackError(f"op {node.op_type!r} is from the unknown domain {node.domain!r}",
                                    where=node_where,
                                    fix="edgepack runs standard ONNX ops only (domains ai.onnx and ai.onnx.ml); "
                                        "export the model without custom or contrib ops")
            if not onnx.defs.has(node.op_type, domain):
                raise EdgepackError(f"unknown op {node.op_type!r} in domain {domain or 'ai.onnx'!r}",
                                    where=node_where,
                                    fix="use a standard ONNX op (https://onnx.ai/onnx/operators/) or re-export")


def _first_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _node_of(exc: Exception) -> str | None:
    text = str(exc)
    match = re.search(r"node name: ([^)\n]*)\)", text) or re.search(r"Name: ?([^\s]+) OpType", text)
    return f"node {match.group(1).strip()!r}" if match and match.group(1).strip() else None
