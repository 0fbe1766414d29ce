"""`--input NAME=FILE` for `run` and `bench`: parse the option, load the array from a .npy or .npz file."""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

FIX = "write it as NAME=FILE with a .npy file (or a .npz holding an array named NAME), e.g. --input x=image.npy"


def parse_input_spec(spec: str) -> tuple[str, Path]:
    """`NAME=FILE` -> (NAME, FILE); the name is everything before the first `=`."""
    name, sep, file = spec.partition("=")
    if not sep or not name.strip():
        raise EdgepackError(f"bad --input {spec!r}: no input name before '='", fix=FIX)
    if not file.strip():
        raise EdgepackError(f"bad --input {spec!r}: no file after '='", fix=FIX)
    return name.strip(), Path(file.strip())


def load_array(name: str, path: Path) -> np.ndarray:
    """The array for input `name` from a .npy file, or from a .npz file (its array `name`, or its only array)."""
    where = str(path.absolute())
    if not path.is_file():
        raise EdgepackError(f"input file {str(path)!r} for {name!r} does not exist", where=where,
                            fix="check the path given to --input")
    suffix = path.suffix.lower()
    if suffix not in (".npy", ".npz"):
        raise EdgepackError(f"input file {str(path)!r} is not a .npy or .npz file", where=where,
                            fix="save the array with numpy.save (.npy) or numpy.savez (.npz)")
    try:
        if suffix == ".npy":
            return np.load(path, allow_pickle=False)
        with np.load(path, allow_pickle=False) as archive:
            return _pick(archive, name, path)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise EdgepackError(f"cannot read {str(path)!r} as a NumPy {suffix} file: {exc}", where=where,
                            fix="save the array with numpy.save (.npy) or numpy.savez (.npz), without object "
                                "arrays") from None


def _pick(archive: Any, name: str, path: Path) -> np.ndarray:
    names = list(archive.files)
    if name in names:
        return archive[name]
    if len(names) == 1:
        return archive[names[0]]
    raise EdgepackError(f"{str(path)!r} holds no array named {name!r} and more than one array "
                        f"({', '.join(names) or 'none'})", where=str(path.absolute()),
                        fix=f"save the input under the name {name!r}, or pass a file holding one array")


def load_inputs(specs: Sequence[str]) -> dict[str, np.ndarray]:
    """The arrays of every `--input NAME=FILE`, by input name."""
    feeds: dict[str, np.ndarray] = {}
    for spec in specs:
        name, path = parse_input_spec(spec)
        if name in feeds:
            raise EdgepackError(f"--input names input {name!r} twice", fix="give each input once")
        feeds[name] = load_array(name, path)
    return feeds


def check_names(feeds: Mapping[str, Any], inputs: Sequence[str], require_all: bool = True) -> None:
    """Every given name must be an input of the model (and, with `require_all`, every input must be given)."""
    unknown = [n for n in feeds if n not in inputs]
    if unknown:
        raise EdgepackError(f"--input names {', '.join(map(repr, unknown))}, which "
                            f"{'is' if len(unknown) == 1 else 'are'} not an input of the model",
                            fix=f"the model's inputs are: {', '.join(inputs) or 'none'}")
    missing = [n for n in inputs if n not in feeds]
    if require_all and missing:
        raise EdgepackError(f"no --input for {', '.join(map(repr, missing))}",
                            fix=f"give every input of the model: {' '.join(f'--input {n}=FILE.npy' for n in inputs)}")
