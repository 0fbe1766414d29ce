"""Parse `--input-shape NAME=1,3,224,224` and pin input shapes (and named symbolic dims) in a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx

from edgepack.runtime.bundle_format import real_inputs
from edgepack.runtime.errors import EdgepackError

if TYPE_CHECKING:
    from edgepack.targets import ShippedRuntime

FIX = ("write it as NAME=D1,D2,... with positive integers, e.g. --input-shape x=1,3,224,224 (NAME= with nothing "
       "after it: a scalar)")


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """`NAME=D1,D2,...` (or `D1xD2`) per spec; `NAME=` pins a scalar (silero-vad's `sr`)."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        if not sep or not name.strip():
            raise EdgepackError(f"bad --input-shape {spec!r}: no input name before '='", fix=FIX)
        try:
            shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
        except ValueError:
            raise EdgepackError(f"bad --input-shape {spec!r}: dimensions must be integers", fix=FIX) from None
        if dims.strip() and not shape or any(d <= 0 for d in shape):
            raise EdgepackError(f"bad --input-shape {spec!r}: dimensions must be positive integers", fix=FIX)
        if name.strip() in shapes:
            raise EdgepackError(f"--input-shape names input {name.strip()!r} twice", fix="give each input once")
        shapes[name.strip()] = shape
    return shapes


BATCH = "batch"
"""The dim name whose pin also fixes every input's leading dynamic dim, whatever that dim is named."""


def pin_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]], dims: dict[str, int]) -> list[str]:
    """Fix input dims in place; returns a description of each pin made. Contradictions are errors. A dim named in
    `dims` takes its size; a `batch` pin also fixes a leading dim left dynamic under another name (or none)."""
    inputs = {i.name: i for i in real_inputs(model.graph)}
    pinned: list[str] = []
    for name, shape in shapes.items():
        info = inputs.get(name)
        if info is None:
            raise EdgepackError(f"--input-shape names {name!r}, which is not an input of the model",
                                fix=f"the model's inputs are: {', '.join(inputs) or 'none'}")
        tensor_shape = info.type.tensor_type.shape
        if info.type.tensor_type.HasField("shape") and len(tensor_shape.dim) != len(shape):
            raise EdgepackError(
                f"input {name!r} has rank {len(tensor_shape.dim)} ({_show(info)}) but --input-shape gives "
                f"{len(shape)} dimensions", where=f"input {name!r}",
                fix=f"give exactly {len(tensor_shape.dim)} dimensions")
        for axis, (dim, value) in enumerate(zip(tensor_shape.dim, shape)):
            if dim.HasField("dim_value") and dim.dim_value > 0 and dim.dim_value != value:
                raise EdgepackError(
                    f"input {name!r} has the fixed size {dim.dim_value} on axis {axis} ({_show(info)}) but "
                    f"--input-shape gives {value}", where=f"input {name!r}",
                    fix="change only the dynamic (named or -1) dimensions")
        tensor_shape.Clear()
        for value in shape:
            tensor_shape.dim.add().dim_value = value
        pinned.append(f"{name}={','.join(map(str, shape))}")
    for info in inputs.values():
        for axis, dim in enumerate(info.type.tensor_type.shape.dim):
            if dim.HasField("dim_param") and dim.dim_param in dims:
                param = dim.dim_param
                dim.dim_value = dims[param]
                pinned.append(f"{info.name}:{param}={dims[param]}")
            elif axis == 0 and BATCH in dims and not dim.dim_value > 0:
                name = dim.dim_param or "?"
                dim.dim_value = dims[BATCH]
                pinned.append(f"{info.name}:{name}={dims[BATCH]} (the batch pin, on the leading dynamic dim)")
    return pinned


def _show(info: onnx.ValueInfoProto) -> str:
    dims = [d.dim_param or (str(d.dim_value) if d.dim_value else "?") for d in info.type.tensor_type.shape.dim]
    return "[" + ", ".join(dims) + "]"


def pins_refused(runtime: ShippedRuntime | None, pinned: onnx.ModelProto, unpinned: onnx.ModelProto) -> str | None:
    """Why the runtime a bundle's ONNX model ships to (onnxruntime, for the generic target) refuses the `pinned`
    model while it takes the `unpinned` one, or None. silero-vad pinned to 512 samples: onnxruntime infers the types
    of the 8 kHz branch too, whose LSTM then gets a rank-4 input."""
    if runtime is None or runtime.open_bundle is None or not runtime.installed():
        return None
    try:
        runtime.run(pinned)
        return None
    except Exception as error:  # noqa: BLE001  (the runtime's own refusal, whatever its type)
        refusal = str(error).strip().splitlines()
    try:
        runtime.run(unpinned)
    except Exception:  # noqa: BLE001  (refused either way: the pins are not the cause)
        return None
    return (refusal[0] if refusal else "refused")[:300]
