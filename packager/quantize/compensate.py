"""Error-compensated weight rounding (GPTQ: Frantar et al., 2022): round a weight's reduction columns one at a time
and spread each column's rounding error over the columns not yet rounded, weighted by how the op's inputs
correlate on calibration samples. The output channels' scales stay those of nearest rounding; only which grid
point each weight takes changes, so the stored form is the same. The ops' float inputs are what the calibration
samples measure: their Gram matrix X Xᵀ per output group (`input_grams`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx

from edgepack.runtime.capability import attribute
from edgepack.runtime.sliding_windows import same_pads, windows

from . import Calibration
from .sensitivity import float_values, with_outputs

DAMPING = 0.01
"""Added to the Gram matrix's diagonal, as a fraction of its mean: keeps it invertible where inputs are collinear."""

BLOCK = 128
"""Columns rounded between two updates of the rest of the weight (the result does not depend on it)."""

Rounding = Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]
"""(weight, its grid step per element, lowest and highest index) -> the grid index of each element."""


def nearest(weight: np.ndarray, steps: np.ndarray, low: int, high: int) -> np.ndarray:
    """Each weight's nearest grid index, clipped to [low, high]."""
    return np.clip(np.rint(weight / steps), low, high)


def compensable(node: onnx.NodeProto, weight_rank: int) -> bool:
    """Whether `node` reads its input 1 as a weight whose rows and input columns this module knows."""
    if node.domain not in ("", "ai.onnx") or len(node.input) < 2:
        return False
    if node.op_type == "Conv":
        return weight_rank >= 3
    if node.op_type == "MatMul":
        return weight_rank == 2
    return node.op_type == "Gemm" and weight_rank == 2 and not attribute(node, "transA", 0)


def weight_rows(node: onnx.NodeProto, weight: np.ndarray) -> np.ndarray:
    """`weight` as [groups, output channels per group, reduction length], the layout `input_columns` matches."""
    if node.op_type == "Conv":
        groups = int(attribute(node, "group", 1))
        return weight.reshape(groups, weight.shape[0] // groups, -1)
    return weight[None] if node.op_type == "Gemm" and attribute(node, "transB", 0) else weight.T[None]


def from_rows(node: onnx.NodeProto, rows: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The inverse of `weight_rows`."""
    if node.op_type == "Conv":
        return rows.reshape(shape)
    return rows[0] if node.op_type == "Gemm" and attribute(node, "transB", 0) else rows[0].T


def input_columns(node: onnx.NodeProto, weight_shape: Sequence[int], value: np.ndarray) -> np.ndarray:
    """`node`'s input `value` as [groups, reduction length, positions]: the vectors each weight row is dotted with."""
    if node.op_type != "Conv":
        return value.reshape(-1, value.shape[-1]).T[None]
    groups = int(attribute(node, "group", 1))
    kernel = [int(k) for k in weight_shape[2:]]
    spatial = len(kernel)
    strides = attribute(node, "strides", [1] * spatial)
    dilations = attribute(node, "dilations", [1] * spatial)
    pads = attribute(node, "pads", [0] * 2 * spatial)
    auto_pad = attribute(node, "auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        amounts = same_pads(value.shape[2:], kernel, strides, dilations, upper=auto_pad == "SAME_UPPER")
    else:
        amounts = [(0, 0)] * spatial if auto_pad == "VALID" else list(zip(pads[:spatial], pads[spatial:]))
    patches = windows(np.pad(value, [(0, 0), (0, 0), *amounts]), kernel, strides, dilations)
    batch, channels = value.shape[:2]
    positions = int(np.prod(patches.shape[2:2 + spatial]))
    taps = int(np.prod(kernel))
    moved = np.moveaxis(patches.reshape(batch, channels, positions, taps), 2, -1)
    return np.ascontiguousarray(moved.reshape(batch, groups, channels // groups * taps, positions)
                                .transpose(1, 2, 0, 3)).reshape(groups, channels // groups * taps, -1)


def input_grams(model: onnx.ModelProto, nodes: dict[str, onnx.NodeProto], weight_shapes: dict[str, Sequence[int]],
                calibration: Calibration) -> dict[str, np.ndarray]:
    """Per node name: the [groups, K, K] sum over calibration samples of its input columns' outer products."""
    infos = float_values(model)
    graph_inputs = {value.name for value in model.graph.input}
    wanted = {node.input[0]: infos[node.input[0]] for node in nodes.values() if node.input[0] in infos}
    probe = with_outputs(model, wanted)
    grams: dict[str, np.ndarray] = {}
    for feeds in calibration.samples:
        values = {**calibration.run(probe, feeds), **{k: v for k, v in feeds.items() if k in graph_inputs}}
        for name, node in nodes.items():
            if node.input[0] not in values:
                continue
            columns = input_columns(node, weight_shapes[name], np.asarray(values[node.input[0]], np.float32))
            gram = np.matmul(columns, np.swapaxes(columns, 1, 2)).astype(np.float64)
            grams[name] = grams[name] + gram if name in grams else gram
    return grams


def compensated_rounding(rows: np.ndarray, steps: np.ndarray, low: int, high: int, gram: np.ndarray) -> np.ndarray:
    """Grid indices in [low, high] for `rows` [groups, outputs, K] on grid `steps` (same shape), each column's
    rounding error carried to the later columns through the inverse of `gram` [groups, K, K]."""
    weights = rows.astype(np.float64)
    steps = steps.astype(np.float64)
    length = weights.shape[2]
    hessian = gram.astype(np.float64)
    diagonal = np.einsum("gkk->gk", hessian)
    dead = diagonal <= 0
    groups, columns = np.nonzero(dead)
    hessian[groups, columns, columns] = 1.0
    hessian += DAMPING * np.maximum(diagonal.mean(axis=1), 1e-12)[:, None, None] * np.eye(length)
    inverse = np.swapaxes(np.linalg.cholesky(np.linalg.inv(hessian)), 1, 2)
    indices = np.empty(weights.shape, np.int32)
    for start in range(0, length, BLOCK):
        end = min(start + BLOCK, length)
        block = weights[:, :, start:end].copy()
        errors = np.empty_like(block)
        for column in range(end - start):
            at = start + column
            index = np.clip(np.rint(block[:, :, column] / steps[:, :, at]), low, high)
            indices[:, :, at] = index
            error = (block[:, :, column] - index * steps[:, :, at]) / inverse[:, at, at][:, None]
            block[:, :, column + 1:] -= error[:, :, None] * inverse[:, at, at + 1:end][:, None, :]
            errors[:, :, column] = error
        weights[:, :, end:] -= np.matmul(errors, inverse[:, start:end, end:])
    return indices


class CompensatedRounding:
    """Compensated rounding for the weights that one top-level node reads at input 1, each weight's grid indices
    kept on the Calibration (a build lowers the same model again with other nodes kept)."""

    def __init__(self, model: onnx.ModelProto, keep: frozenset[str], calibration: Calibration, kind: str) -> None:
        self.model, self.calibration, self.kind = model, calibration, kind
        tensors = {tensor.name: tensor for tensor in model.graph.initializer}
        reads: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
        for node in model.graph.node:
            for index, name in enumerate(node.input):
                reads.setdefault(name, []).append((node, index))
        self.nodes = {name: found[0][0] for name, found in reads.items()
                      if name in tensors and len(found) == 1 and found[0][1] == 1 and found[0][0].name not in keep
                      and compensable(found[0][0], len(tensors[name].dims))}
        self.shapes = {name: list(tensors[name].dims) for name in self.nodes}

    def rounding(self, tensor: str) -> Rounding | None:
        """How to round weight `tensor`, or None when it is not compensable here."""
        node = self.nodes.get(tensor)
        if node is None:
            return None

        def round_weight(weight: np.ndarray, steps: np.ndarray, low: int, high: int) -> np.ndarray:
            key = (self.kind, tensor, high)
            if key not in self.calibration.rounded:
                gram = self._grams().get(node.name)
                self.calibration.rounded[key] = nearest(weight, steps, low, high) if gram is None else from_rows(
                    node, compensated_rounding(weight_rows(node, weight), weight_rows(node, steps), low, high, gram),
                    weight.shape)
            return self.calibration.rounded[key]

        return round_weight

    def _grams(self) -> dict[str, np.ndarray | None]:
        """The Gram matrices of every node here, those not measured yet measured in one calibration pass."""
        grams = self.calibration.grams
        pending = {node.name: node for node in self.nodes.values() if node.name not in grams}
        if pending:
            shapes = {node.name: self.shapes[tensor] for tensor, node in self.nodes.items() if node.name in pending}
            grams.update(input_grams(self.model, pending, shapes, self.calibration))
            grams.update({name: None for name in pending if name not in grams})
        return grams
