"""The `.epk` plan format on the Python side: op ids, dtypes and the byte writer (the C loader is the reader)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from .op_contract import contract

MAGIC = b"EPK1"
FORMAT_VERSION = 1
HEADER_BYTES = 96
TENSOR_RECORD_BYTES = 48
OP_RECORD_BYTES = 16
ABSENT = 0xFFFFFFFF
MAX_RANK = 8
WEIGHT_ALIGN = 64
ARENA_ALIGN = 64

ARENA, WEIGHT = 0, 1

_CONTRACT = contract()
OPS = {op.name: op.id for op in _CONTRACT.ops}
"""Op ids of the plan format (ops.toml)."""
DTYPES = dict(_CONTRACT.dtypes)
"""numpy dtype names to the plan's dtype codes (ONNX TensorProto numbers)."""
WEIGHT_ONLY = dict(_CONTRACT.weight_only_dtypes)
"""Dtypes only quantized weights and their scales have (weights, never arena tensors); int4 packs two a byte."""
BINARY = {name: i for i, name in enumerate(_CONTRACT.kinds["Binary"])}
UNARY = {name: i for i, name in enumerate(_CONTRACT.kinds["Unary"])}
ACTIVATIONS = {name: i for i, name in enumerate(_CONTRACT.kinds["Activation"])}
REDUCE = {f"Reduce{name}": i for i, name in enumerate(_CONTRACT.kinds["Reduce"])}


class F32(float):
    """A parameter word written as float32 bits (plain ints are written as int32)."""


@dataclass
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    location: int = ARENA
    data: np.ndarray | None = None
    offset: int = 0

    @property
    def nbytes(self) -> int:
        count = int(np.prod(self.shape, dtype=np.int64))
        return (count + 1) // 2 if self.dtype == "int4" else count * np.dtype(self.dtype).itemsize


@dataclass
class Op:
    kind: str
    inputs: list[int | None]
    outputs: list[int]
    params: list[int | float] = field(default_factory=list)


@dataclass
class Plan:
    tensors: list[Tensor]
    ops: list[Op]
    inputs: list[int]
    outputs: list[int]
    arena_bytes: int
    scratch_bytes: int


def _align(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def weight_bytes(tensor: Tensor) -> bytes:
    """A weight's data as the plan stores it: int4 two a byte, the first in the low nibble."""
    if tensor.dtype == "int4":
        nibbles = np.asarray(tensor.data).astype(np.int8).reshape(-1).view(np.uint8) & 0xF
        nibbles = np.append(nibbles, np.zeros(len(nibbles) % 2, np.uint8))
        return (nibbles[0::2] | nibbles[1::2] << 4).astype(np.uint8).tobytes()
    return np.ascontiguousarray(tensor.data, dtype=tensor.dtype).tobytes()


def _param_words(params: list[int | float]) -> bytes:
    return b"".join(struct.pack("<f", p) if isinstance(p, F32) else struct.pack("<i", int(p)) for p in params)


def write(plan: Plan) -> bytes:
    """The plan as `.epk` bytes: header, tensor table, op table, op tensor list, input/output list, parameters,
    names, then the 64-byte-aligned weight blob."""
    names = bytearray()
    weights = bytearray()
    tensor_records = bytearray()
    for tensor in plan.tensors:
        name = tensor.name.encode()
        name_offset = len(names)
        names += name
        if tensor.location == WEIGHT:
            weights += bytes(_align(len(weights), WEIGHT_ALIGN) - len(weights))
            tensor.offset = len(weights)
            weights += weight_bytes(tensor)
        dims = list(tensor.shape) + [0] * (MAX_RANK - len(tensor.shape))
        code = DTYPES.get(tensor.dtype) or WEIGHT_ONLY[tensor.dtype]
        tensor_records += struct.pack("<BBBBIII8I", code, len(tensor.shape), tensor.location, 0,
                                      name_offset, len(name), tensor.offset, *dims)
    io, params, op_records = [], bytearray(), bytearray()
    for op in plan.ops:
        words = _param_words(op.params)
        op_records += struct.pack("<HBBIII", OPS[op.kind], len(op.inputs), len(op.outputs), len(io), len(params) // 4,
                                  len(words) // 4)
        io += [ABSENT if t is None else t for t in op.inputs] + op.outputs
        params += words
    sections = [bytes(tensor_records), bytes(op_records), struct.pack(f"<{len(io)}I", *io),
                struct.pack(f"<{len(plan.inputs) + len(plan.outputs)}I", *plan.inputs, *plan.outputs),
                bytes(params), bytes(names)]
    offsets, at = [], HEADER_BYTES
    for section in sections:
        offsets.append(at)
        at = _align(at + len(section), 4)
    weights_offset = _align(at, WEIGHT_ALIGN)
    header = struct.pack("<4s20I", MAGIC, FORMAT_VERSION, HEADER_BYTES, 0, len(plan.tensors), offsets[0],
                         len(plan.ops), offsets[1], len(io), offsets[2], len(plan.inputs), len(plan.outputs),
                         offsets[3], offsets[4], len(params), offsets[5], len(names), weights_offset, len(weights),
                         plan.arena_bytes, plan.scratch_bytes)
    out = bytearray(header + bytes(HEADER_BYTES - len(header)))
    for offset, section in zip(offsets, sections):
        out += bytes(offset - len(out)) + section
    out += bytes(weights_offset - len(out)) + weights
    return bytes(out)


def port_names(data: bytes) -> tuple[list[str], list[str]]:
    """The names of a plan's inputs and outputs, in order (enough to feed and read a plan file without its
    model); the C loader checks the rest when the plan is opened."""
    if len(data) < HEADER_BYTES or data[:4] != MAGIC:
        raise ValueError("not an .epk plan")
    words = struct.unpack_from("<21I", data, 0)
    tensors_at, n_inputs, n_outputs, ports_at, names_at = words[5], words[10], words[11], words[12], words[15]
    names = []
    for index in struct.unpack_from(f"<{n_inputs + n_outputs}I", data, ports_at):
        name_offset, name_length = struct.unpack_from("<II", data, tensors_at + index * TENSOR_RECORD_BYTES + 4)
        names.append(data[names_at + name_offset:names_at + name_offset + name_length].decode())
    return names[:n_inputs], names[n_inputs:]
