"""Seeded random inputs that fit a model's input specs: for benchmarks and smoke runs without real data."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import onnx

from edgepack.runtime.errors import EdgepackError

FIRST_AXIS = 1
"""Size of a symbolic or unknown dim on axis 0 (the batch, usually)."""
OTHER_AXES = 64
"""Size of a symbolic or unknown dim on any other axis."""
INTEGER_HIGH = 10
"""Generated integers lie in [0, INTEGER_HIGH), or lower where `integer_limits` bounds the input."""
PASS_THROUGH = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"}
"""Ops that keep their input's values: an index read through them still indexes the same table."""


class Spec(Protocol):
    """What `sample_feeds` reads of an input: `edgepack.runtime.TensorSpec` fits."""

    @property
    def name(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> Sequence[int | str | None] | None: ...


MAX_GENERATED_ELEMENTS = 1 << 28
"""The largest input generated as sample data (1 GiB of float32)."""


def sample_feeds(specs: Sequence[Spec], seed: int = 0, dims: Mapping[str, int] | None = None,
                 limits: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """One array per spec: floats uniform in [-1, 1], integers in [0, 10) (below `limits[name]` when given: see
    `integer_limits`), bools at random.

    Fixed dims are kept. A symbolic dim takes its size from `dims` (dim name -> size), else 1 on axis 0 and 64
    elsewhere; a symbolic name shared by several axes or inputs gets one size everywhere. Unknown dims (None)
    follow the same axis rule. The same `seed` gives the same arrays."""
    sizes = dict(dims or {})
    for dim, size in sizes.items():
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size <= 0:
            raise EdgepackError(f"dim {dim!r} must be a positive integer, got {size!r}",
                                fix="give each symbolic dim a size of 1 or more")
    rng = np.random.default_rng(seed)
    limits = limits or {}
    return {spec.name: _sample(spec, _shape(spec, sizes), rng, limits.get(spec.name, INTEGER_HIGH)) for spec in specs}


def _shape(spec: Spec, sizes: dict[str, int]) -> tuple[int, ...]:
    if spec.shape is None:
        raise EdgepackError(f"input {spec.name!r} has no known rank, so no input can be generated for it",
                            where=f"input {spec.name!r}", fix="give the input yourself (--input NAME=FILE.npy)")
    shape = []
    for axis, dim in enumerate(spec.shape):
        if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
            shape.append(int(dim))
        elif isinstance(dim, str):
            shape.append(sizes.setdefault(dim, FIRST_AXIS if axis == 0 else OTHER_AXES))
        else:
            shape.append(FIRST_AXIS if axis == 0 else OTHER_AXES)
    elements = math.prod(shape)
    if elements > MAX_GENERATED_ELEMENTS:
        raise EdgepackError(f"input {spec.name!r} of shape {shape} has {elements:,} elements, too many to generate "
                            f"sample data for (at most {MAX_GENERATED_ELEMENTS:,})", where=f"input {spec.name!r}",
                            fix="pin the sizes it will run at with --input-shape, or give the input yourself "
                                "(--input NAME=FILE.npy)")
    return tuple(shape)


def _sample(spec: Spec, shape: tuple[int, ...], rng: np.random.Generator, high: int) -> np.ndarray:
    try:
        dtype = np.dtype(spec.dtype)
    except TypeError:
        dtype = None
    if dtype is not None and dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype is not None and dtype.kind in "iu":
        return rng.integers(0, max(1, min(high, INTEGER_HIGH)), shape, dtype=dtype)
    if dtype is not None and dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    raise EdgepackError(f"input {spec.name!r} is {spec.dtype}, for which no random input can be generated",
                        where=f"input {spec.name!r}", fix="give the input yourself (--input NAME=FILE.npy)")


def dims_of(specs: Sequence[Spec], feeds: Mapping[str, Any]) -> dict[str, int]:
    """The sizes that given arrays fix for symbolic dims, so that generated inputs agree with them."""
    sizes: dict[str, int] = {}
    for spec in specs:
        array = feeds.get(spec.name)
        if array is None or spec.shape is None or np.ndim(array) != len(spec.shape):
            continue
        for dim, size in zip(spec.shape, np.shape(array)):
            if isinstance(dim, str):
                sizes.setdefault(dim, int(size))
    return sizes


def parse_dims(specs: Sequence[str]) -> dict[str, int]:
    """`--dim NAME=SIZE` options -> {NAME: SIZE}."""
    dims: dict[str, int] = {}
    for spec in specs:
        name, sep, size = spec.partition("=")
        try:
            value = int(size)
        except ValueError:
            value = 0
        if not sep or not name.strip() or value <= 0:
            raise EdgepackError(f"bad --dim {spec!r}", fix="write it as NAME=SIZE with a positive integer size, "
                                                          "e.g. --dim batch=4 (`edgepack inspect` shows the dim names)")
        dims[name.strip()] = value
    return dims


def integer_limits(model: onnx.ModelProto) -> dict[str, int]:
    """Exclusive upper bounds for the model's integer inputs where their values matter: inputs named like a mask
    take 0 and 1; inputs that are (through Cast, Reshape and the like) the indices of a Gather of a table whose
    gathered axis is fixed stay below its length (a token type table of 2 rows, a vocabulary)."""
    shapes = _static_shapes(model)
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    limits = {}
    for value in model.graph.input:
        if value.type.tensor_type.elem_type not in INTEGER_TYPES:
            continue
        found = [2] if "mask" in value.name.lower() else []
        found += _table_lengths(value.name, readers, shapes, set())
        if found:
            limits[value.name] = min(found)
    return limits


INTEGER_TYPES = {onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16, onnx.TensorProto.UINT16,
                 onnx.TensorProto.INT32, onnx.TensorProto.UINT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT64}


def _static_shapes(model: onnx.ModelProto) -> dict[str, list[int | None]]:
    """Shapes onnx's inference gives the model's values, weights included (None for a dim it leaves open)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (a model inference rejects still gets its weights' shapes)
        inferred = model
    shapes = {t.name: list(t.dims) for t in inferred.graph.initializer}
    for value in [*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output]:
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None
                                  for d in value.type.tensor_type.shape.dim]
    return shapes


def _table_lengths(name: str, readers: dict[str, list[onnx.NodeProto]], shapes: dict[str, list[int | None]],
                   seen: set[str]) -> list[int]:
    """The lengths of the tables `name` indexes, following it through PASS_THROUGH ops."""
    lengths = []
    seen.add(name)
    for node in readers.get(name, []):
        if node.op_type == "Gather" and len(node.input) > 1 and node.input[1] == name:
            table = shapes.get(node.input[0])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if table and -len(table) <= axis < len(table) and table[axis]:
                lengths.append(int(table[axis]))
        elif node.op_type in PASS_THROUGH and node.input and node.input[0] == name:
            lengths += [n for out in node.output if out not in seen for n in _table_lengths(out, readers, shapes, seen)]
    return lengths
