"""`edgepack run`: run a model or bundle once on inputs from .npy/.npz files, summarise and save the outputs."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape
from rich.table import Table

from edgepack.runtime.errors import EdgepackError

from .input_files import check_names, load_inputs


@dataclass(frozen=True)
class RunResult:
    model: str
    providers: list[str]
    """The provider of each partition, in order."""
    outputs: dict[str, np.ndarray]
    seconds: float
    """Time of `Session.run` (the session is built first, outside it)."""
    files: dict[str, Path] = field(default_factory=dict)
    """Output name -> the .npy file it was written to (with -o)."""


def run_model(model: str | Path, inputs: Sequence[str], provider: str | None = None,
              output_dir: str | Path | None = None) -> RunResult:
    """Run `model` (an .onnx file or a bundle folder) on `inputs` (`NAME=FILE` specs); write outputs to
    `output_dir/<name>.npy` when given."""
    from edgepack.runtime import Session

    feeds = load_inputs(inputs)
    session = Session(model, providers=[provider] if provider else None)
    check_names(feeds, [spec.name for spec in session.inputs])
    start = time.perf_counter()
    outputs = session.run(feeds)
    seconds = time.perf_counter() - start
    files = write_outputs(outputs, Path(output_dir)) if output_dir is not None else {}
    return RunResult(str(model), [p.provider for p in session.partitions], outputs, seconds, files)


def file_name(name: str) -> str:
    """A file name for an output name: characters other than letters, digits, `.`, `_` and `-` become `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "output"


def write_outputs(outputs: dict[str, np.ndarray], folder: Path) -> dict[str, Path]:
    """Save each output as `folder/<sanitised name>.npy`; names that sanitise alike get `-2`, `-3`, ... appended."""
    if folder.exists() and not folder.is_dir():
        raise EdgepackError(f"output folder {str(folder)!r} is a file", where=str(folder.absolute()),
                            fix="choose a folder with -o")
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    taken: set[str] = set()
    for name, value in outputs.items():
        stem = base = file_name(name)
        n = 1
        while stem.lower() in taken:
            n += 1
            stem = f"{base}-{n}"
        taken.add(stem.lower())
        files[name] = folder / f"{stem}.npy"
        np.save(files[name], value, allow_pickle=False)
    return files


def stats(value: np.ndarray) -> dict[str, Any]:
    """dtype, shape, and min/max/mean (None for empty or non-numeric arrays; NaN and infinities as strings)."""
    array = np.asarray(value)
    summary: dict[str, Any] = {"dtype": array.dtype.name, "shape": list(array.shape),
                               "min": None, "max": None, "mean": None}
    if array.size and array.dtype.kind in "biuf":
        numbers = array.astype(np.float64) if array.dtype.kind == "b" else array
        summary["min"] = _number(numbers.min())
        summary["max"] = _number(numbers.max())
        summary["mean"] = _number(numbers.mean(dtype=np.float64))
    return summary


def _number(value: Any) -> int | float | str:
    if isinstance(value, np.integer):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else str(value)


def as_dict(result: RunResult) -> dict[str, Any]:
    return {
        "model": result.model,
        "providers": result.providers,
        "seconds": result.seconds,
        "outputs": [{"name": name, **stats(value), "file": str(result.files[name]) if name in result.files else None}
                    for name, value in result.outputs.items()],
    }


def table(result: RunResult) -> Table:
    out = Table(title=f"edgepack run: {escape(Path(result.model).name)} on {', '.join(dict.fromkeys(result.providers))}"
                f" ({result.seconds * 1000:.1f} ms)", title_justify="left")
    for column in ("output", "dtype", "shape", "min", "max", "mean"):
        out.add_column(column, justify="right" if column in ("min", "max", "mean") else "left")
    for name, value in result.outputs.items():
        s = stats(value)
        out.add_row(escape(name), s["dtype"], escape(str(s["shape"])), *(_show(s[k]) for k in ("min", "max", "mean")))
    return out


def _show(value: int | float | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)
