"""Weights a model keeps in external data files, mapped from disk instead of read into memory. A model over
protobuf's 2 GB limit can only hold its weights that way, and a build of it must never copy them: its proto stays a
graph with references, each pass and check runs on that, and whatever needs the values maps them read-only."""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import numpy as np
import onnx
from onnx import external_data_helper, helper, numpy_helper

from .graph_protos import iter_graph_protos

DATA_ALIGNMENT = 1 << 16
"""Offsets of tensors in a data file a bundle writes: onnxruntime maps external data whose offset is a multiple of
the allocation granularity (64 KB on Windows, the page size elsewhere)."""


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Every tensor of the model (initializers and Constant values, subgraphs included) whose data is external."""
    tensors: list[onnx.TensorProto] = []
    for graph in iter_graph_protos(model.graph):
        tensors.extend(graph.initializer)
        for node in graph.node:
            tensors.extend(a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    return [t for t in tensors if external_data_helper.uses_external_data(t)]


def mapped_initializers(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The main graph's initializers whose data is external: the weights that stay mapped."""
    return [t for t in model.graph.initializer if external_data_helper.uses_external_data(t)]


def tensor_bytes(tensor: onnx.TensorProto) -> int:
    """The bytes of an external tensor's data."""
    length = _info(tensor)[2]
    if length is not None:
        return length
    itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    return int(np.prod(tensor.dims, dtype=np.int64)) * itemsize


def keep_weights_external(model: onnx.ModelProto, folder: Path) -> None:
    """Make the main graph's external Constant values initializers (paddle2onnx writes weights as Constant nodes),
    which stay external, and read every other external tensor (in subgraphs) into the proto."""
    graph = model.graph
    kept = []
    for node in graph.node:
        value = next((a.t for a in node.attribute if a.name == "value"), None) if node.op_type == "Constant" else None
        if value is not None and external_data_helper.uses_external_data(value):
            value.name = node.output[0]
            graph.initializer.append(value)
        else:
            kept.append(node)
    if len(kept) < len(graph.node):
        del graph.node[:]
        graph.node.extend(kept)
    for depth, subgraph in enumerate(iter_graph_protos(graph)):
        tensors = [a.t for node in subgraph.node for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
        if depth:  # a subgraph (the main graph comes first)
            tensors += list(subgraph.initializer)
        for tensor in tensors:
            if external_data_helper.uses_external_data(tensor):
                external_data_helper.load_external_data_for_tensor(tensor, str(folder))
                tensor.data_location = onnx.TensorProto.DEFAULT
                del tensor.external_data[:]


def _info(tensor: onnx.TensorProto) -> tuple[str, int, int | None]:
    entries = {entry.key: entry.value for entry in tensor.external_data}
    length = entries.get("length")
    return entries["location"], int(entries.get("offset") or 0), int(length) if length else None


def mapped(tensor: onnx.TensorProto, folder: Path) -> np.ndarray:
    """The tensor's values, mapped read-only from its data file in `folder` (not read into memory)."""
    location, offset, _ = _info(tensor)
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
    shape = tuple(tensor.dims)
    count = int(np.prod(shape, dtype=np.int64))
    if not count:
        return np.zeros(shape, dtype)
    return _file_map(folder / location)[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


_MAPS: weakref.WeakValueDictionary[tuple[str, int, int], np.memmap] = weakref.WeakValueDictionary()
"""Each data file mapped once in this process while some tensor of it is in use: a page mapped twice counts twice
in the resident memory (the oracle and onnxruntime read the same weights)."""


def _file_map(path: Path) -> np.memmap:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    whole = _MAPS.get(key)
    if whole is None:
        whole = np.memmap(path, dtype=np.uint8, mode="r")
        _MAPS[key] = whole
    return whole


def mapped_weights(model: onnx.ModelProto, folder: Path) -> dict[str, np.ndarray]:
    """The main graph's external initializers, mapped, by name."""
    return {tensor.name: mapped(tensor, folder) for tensor in mapped_initializers(model)}


def weights_as_inputs(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose external initializers are graph inputs of the same type and shape (no data), or the
    model itself where it has none: what onnx's checker and evaluator and onnxruntime take with the mapped weights
    as feeds (the checker reads external data relative to the working folder, not the model's)."""
    external = mapped_initializers(model)
    if not external:
        return model
    names = {t.name for t in external}
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    kept = [t for t in graph.initializer if t.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    declared = {i.name for i in graph.input}
    graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in external
                       if t.name not in declared)
    return copy


INLINE_LIMIT = 1024
"""Weights a written model keeps in its proto: under this many bytes (shapes, scales); larger ones go to its data
file, those a pass made (BatchNormalization folded into Conv) as well as those copied from the source's files."""


def write_weights(model: onnx.ModelProto, source: Path, folder: Path, data_name: str) -> int:
    """Put the main graph's weights of INLINE_LIMIT bytes or more into `folder / data_name`, in initializer order
    at DATA_ALIGNMENT, and point the model's references there; returns the bytes written. External ones are copied
    file range to file range, through the page cache: no weight read from `source` is held in memory."""
    position = 0
    with open(folder / data_name, "wb") as out:
        for tensor in model.graph.initializer:
            external = external_data_helper.uses_external_data(tensor)
            if not external and (tensor.data_type == onnx.TensorProto.STRING or tensor.ByteSize() < INLINE_LIMIT):
                continue
            position = -(-position // DATA_ALIGNMENT) * DATA_ALIGNMENT
            if external:
                location, offset, length = _info(tensor)
                path = source / location
                size = length if length is not None else os.path.getsize(path) - offset
                out.truncate(position)
                with open(path, "rb") as data:
                    _copy_range(data.fileno(), out.fileno(), offset, position, size)
            else:
                values = numpy_helper.to_array(tensor)
                data = values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes()
                size = len(data)
                out.seek(position)
                out.write(data)
                tensor.CopyFrom(onnx.TensorProto(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims))
            point_to(tensor, data_name, position, size)
            position += size
        out.truncate(position)
    return position


def point_to(tensor: onnx.TensorProto, location: str, offset: int, length: int) -> None:
    """Make `tensor`'s data the `length` bytes at `offset` of the file `location` (relative to the model)."""
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    tensor.data_location = onnx.TensorProto.EXTERNAL


def _copy_range(source: int, target: int, offset: int, position: int, size: int) -> None:
    """`size` bytes of `source` from `offset` into `target` at `position`, in the kernel where it can."""
    copy_range = getattr(os, "copy_file_range", None)
    while size:
        if copy_range is not None:
            try:
                done = copy_range(source, target, size, offset, position)
            except OSError:
                copy_range = None
                continue
        else:
            chunk = os.pread(source, min(size, 1 << 24), offset)
            done = os.pwrite(target, chunk, position)
        if not done:
            raise OSError(f"external data ends {size} bytes early")
        size, offset, position = size - done, offset + done, position + done
