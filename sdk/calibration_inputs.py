"""Calibration samples for static int8 quantization: load them from a folder of .npz/.npy files (or take a Python
iterable of feeds dicts) and check each against the model's inputs."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .input_files import load_array

if TYPE_CHECKING:
    from edgepack.runtime import TensorSpec

CalibrationSource = str | Path | Iterable[Mapping[str, np.ndarray]]
"""A folder of .npz/.npy files (one sample each), or (Python API) an iterable of feeds dicts."""

SUFFIXES = (".npz", ".npy")


def load_calibration(source: CalibrationSource, specs: Sequence[TensorSpec], minimum: int = 1
                     ) -> list[dict[str, np.ndarray]]:
    """The calibration samples, each checked against the model's inputs."""
    folder = Path(source) if isinstance(source, (str, Path)) else None
    labelled = _from_folder(folder, specs) if folder is not None else _from_iterable(source)
    if len(labelled) < minimum:
        raise EdgepackError(f"found {len(labelled)} calibration sample{'' if len(labelled) == 1 else 's'}, "
                            f"need at least {minimum}", where=str(folder.absolute()) if folder is not None else None,
                            fix=f"add more samples, e.g. {_savez_example(specs, folder, len(labelled) + 1)}")
    for label, sample in labelled:
        _check(sample, specs, label)
    return [sample for _, sample in labelled]


def _from_folder(folder: Path, specs: Sequence[TensorSpec]) -> list[tuple[str, dict[str, np.ndarray]]]:
    """(file path, sample) for each .npz/.npy file directly in `folder`, in file-name order."""
    where = str(folder.absolute())
    if not folder.exists():
        raise EdgepackError(f"calibration folder {str(folder)!r} does not exist", where=where,
                            fix="give --calibration a folder of .npz files, one sample each")
    if not folder.is_dir():
        raise EdgepackError(f"calibration path {str(folder)!r} is a file, not a folder", where=where,
                            fix="put the sample files in a folder and give --calibration that folder")
    paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file())
    if not paths:
        raise EdgepackError(f"calibration folder {str(folder)!r} holds no .npz or .npy files", where=where,
                            fix=f"save one sample per .npz file, e.g. {_savez_example(specs, folder)}")
    return [(str(path), _read_sample(path, specs)) for path in paths]


def _read_sample(path: Path, specs: Sequence[TensorSpec]) -> dict[str, np.ndarray]:
    if path.suffix.lower() == ".npz":
        return _read_npz(path)
    if len(specs) != 1:
        raise EdgepackError(f"calibration file {str(path)!r} is a .npy file, but the model has {len(specs)} inputs",
                            where=str(path.absolute()),
                            fix=f"save each sample as a .npz holding one array per input, e.g. "
                                f"{_savez_example(specs, path.parent)}")
    array = load_array(specs[0].name, path)
    if not isinstance(array, np.ndarray):
        array.close()
        raise _unreadable(path, "it is a .npz archive")
    return {specs[0].name: array}


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of a .npz file, by name; never unpickles."""
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise _unreadable(path, "it is a .npy array, not a .npz archive")
        with loaded as archive:
            return {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise _unreadable(path, str(exc)) from None


def _unreadable(path: Path, reason: str) -> EdgepackError:
    return EdgepackError(f"cannot read {str(path)!r} as a NumPy {path.suffix.lower()} file: {reason}",
                         where=str(path.absolute()),
                         fix="save the array with numpy.save (.npy) or numpy.savez (.npz), without object arrays")


def _from_iterable(source: Iterable[Mapping[str, np.ndarray]]) -> list[tuple[str, dict[str, np.ndarray]]]:
    """("sample N", sample) for each feeds dict of `source`, its values as arrays."""
    if isinstance(source, Mapping):
        raise EdgepackError("calibration is one feeds dict, not an iterable of them",
                            fix="pass a list of feeds dicts, e.g. [feeds], or a folder of .npz files")
    if not isinstance(source, Iterable):
        raise EdgepackError(f"calibration must be a folder or an iterable of feeds dicts, got "
                            f"{type(source).__name__}", fix="pass a folder path or a list of {input_name: array} dicts")
    labelled = []
    for index, feeds in enumerate(source):
        if not isinstance(feeds, Mapping):
            raise EdgepackError(f"calibration sample {index} is of type {type(feeds).__name__}, not a mapping "
                                f"of input name to array", where=f"sample {index}",
                                fix="make each sample a dict {input_name: array}")
        labelled.append((f"sample {index}", {name: np.asarray(value) for name, value in feeds.items()}))
    return labelled


def _check(sample: Mapping[str, np.ndarray], specs: Sequence[TensorSpec], where: str) -> None:
    """Names, dtypes, ranks, fixed dims and symbolic dims of one sample against the model's inputs."""
    names = [spec.name for spec in specs]
    unknown = [name for name in sample if name not in names]
    missing = [name for name in names if name not in sample]
    if unknown or missing:
        raise EdgepackError(f"calibration sample does not match the model's inputs: unknown {unknown or 'none'}, "
                            f"missing {missing or 'none'}", where=where,
                            fix=f"give one array per input, named exactly {names}")
    symbols: dict[str, tuple[int, str, int]] = {}
    for spec in specs:
        array = sample[spec.name]
        if array.dtype.name != spec.dtype:
            raise EdgepackError(f"calibration input {spec.name!r} is {array.dtype.name}, expected {spec.dtype}",
                                where=where, fix=f"convert it, e.g. {_astype(spec.dtype)}")
        if spec.shape is not None:
            _check_shape(spec, array.shape, symbols, where)


def _check_shape(spec: TensorSpec, shape: tuple[int, ...], symbols: dict[str, tuple[int, str, int]],
                 where: str) -> None:
    """Rank and dims of one input; `symbols` maps each symbolic dim seen so far to (size, input, axis)."""
    expected = list(spec.shape or [])
    fix = (f"give {spec.name!r} an array of shape {expected} (a named dim may take any size, the same wherever "
           f"the name appears in a sample; None and '?' take any size)")
    if len(shape) != len(expected):
        raise EdgepackError(f"calibration input {spec.name!r} has rank {len(shape)} (shape {list(shape)}), expected "
                            f"rank {len(expected)}: {expected}", where=where, fix=fix)
    for axis, (want, got) in enumerate(zip(expected, shape)):
        if isinstance(want, int) and want != got:
            raise EdgepackError(f"calibration input {spec.name!r} has size {got} on axis {axis} (shape "
                                f"{list(shape)}), expected {want}: {expected}", where=where, fix=fix)
        if isinstance(want, str) and want.isidentifier():
            size, name, first_axis = symbols.setdefault(want, (got, spec.name, axis))
            if size != got:
                raise EdgepackError(f"dim {want!r} is {size} in calibration input {name!r} (axis {first_axis}) but "
                                    f"{got} in {spec.name!r} (axis {axis} of {expected})", where=where,
                                    fix=f"give every axis named {want!r} the same size within a sample")


def _astype(dtype: str) -> str:
    return f"array.astype(np.{dtype})" if hasattr(np, dtype) else f"array.astype(ml_dtypes.{dtype})"


def _savez_example(specs: Sequence[TensorSpec], folder: Path | None = None, number: int = 1) -> str:
    """`np.savez(FOLDER/'0001.npz', **{...})` naming the model's actual inputs."""
    file = f"{number:04d}.npz"
    target = repr(str(folder / file) if folder is not None else file)
    arrays = ", ".join(f"{spec.name!r}: {_var(spec.name)}" for spec in specs)
    return f"np.savez({target}, **{{{arrays}}})"


def _var(name: str) -> str:
    """A Python variable name for input `name`'s array."""
    cleaned = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "input"
    return f"{cleaned}_array" if cleaned[0].isalpha() else f"array_{cleaned}"
