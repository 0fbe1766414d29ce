"""Where ops read weights worth quantizing, and along which axes: the output channel (one int8 scale each) and the
reduction axis (int4 blocks run along it)."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from edgepack.runtime.capability import attribute


@dataclass(frozen=True)
class Slot:
    channel_axis: int
    reduce_axis: int
    flatten: bool = False
    """Conv weights: blocks run over the flattened (in-channels x kernel) axis."""


def _conv(node: onnx.NodeProto, rank: int) -> Slot:
    return Slot(0, 1, flatten=True)


def _conv_transpose(node: onnx.NodeProto, rank: int) -> Slot:
    return Slot(1, 0)


def _matmul(node: onnx.NodeProto, rank: int) -> Slot | None:
    return Slot(1, 0) if rank == 2 else None


def _gemm(node: onnx.NodeProto, rank: int) -> Slot:
    return Slot(0, 1) if attribute(node, "transB", 0) else Slot(1, 0)


def _recurrent(node: onnx.NodeProto, rank: int) -> Slot:
    return Slot(1, 2)


SLOTS = {
    "Conv": {1: _conv},
    "ConvTranspose": {1: _conv_transpose},
    "MatMul": {1: _matmul},
    "Gemm": {1: _gemm},
    "LSTM": {1: _recurrent, 2: _recurrent},
    "GRU": {1: _recurrent, 2: _recurrent},
    "RNN": {1: _recurrent, 2: _recurrent},
}
"""Op type -> input index -> the slot for a weight of that rank there (None: not a weight slot)."""


def slot(node: onnx.NodeProto, index: int, rank: int) -> Slot | None:
    if node.domain not in ("", "ai.onnx"):
        return None
    finder = SLOTS.get(node.op_type, {}).get(index)
    return finder(node, rank) if finder else None
