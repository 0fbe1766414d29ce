"""Tell a truncated protobuf from a file that is not a protobuf at all, by walking its top-level wire format."""

from __future__ import annotations

# ModelProto's top-level field numbers (onnx.proto): ir_version 1 ... functions 25, configuration 26.
MODEL_FIELDS = frozenset({1, 2, 3, 4, 5, 6, 7, 8, 14, 20, 25, 26})


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            return None
    return None


def diagnose(data: bytes) -> str:
    """'truncated' when the fields look like an ONNX model cut short, else 'not-protobuf'."""
    pos = 0
    fields = 0
    while pos < len(data):
        tag = _varint(data, pos)
        if tag is None:
            return "truncated" if fields else "not-protobuf"
        key, pos = tag
        number, wire_type = key >> 3, key & 7
        if number not in MODEL_FIELDS or wire_type not in (0, 1, 2, 5):
            return "not-protobuf"
        fields += 1
        if wire_type == 0:
            value = _varint(data, pos)
            if value is None:
                return "truncated"
            pos = value[1]
        elif wire_type == 2:
            length = _varint(data, pos)
            if length is None:
                return "truncated"
            pos = length[1] + length[0]
            if pos > len(data):
                return "truncated"
        else:
            pos += 8 if wire_type == 1 else 4
            if pos > len(data):
                return "truncated"
    return "not-protobuf"
