"""load_calibration: calibration samples from a folder or an iterable, checked against the model's inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgepack.calibration_inputs import load_calibration
from edgepack.runtime import TensorSpec
from edgepack.runtime.errors import EdgepackError

ONE = [TensorSpec("x", "float32", [1, 3, "h", "w"])]
TWO = [TensorSpec("x", "float32", [1, 3, "h", "w"]), TensorSpec("mask", "bool", [1, "h", "w", None])]


def _image(h: int = 4, w: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, h, w)).astype(np.float32)


def _mask(h: int = 4, w: int = 5) -> np.ndarray:
    return np.zeros((1, h, w, 2), dtype=bool)


def _error(source: object, specs: list[TensorSpec], minimum: int = 1) -> str:
    with pytest.raises(EdgepackError) as info:
        load_calibration(source, specs, minimum)
    return str(info.value)


def _folder_with(tmp_path: Path, **arrays: np.ndarray) -> Path:
    np.savez(tmp_path / "0001.npz", **arrays)
    return tmp_path


def test_npz_folder_loads_in_sorted_order(tmp_path: Path) -> None:
    first, second = _image(seed=1), _image(h=6, w=7, seed=2)
    np.savez(tmp_path / "b.npz", x=second, mask=_mask(6, 7))
    np.savez(tmp_path / "a.npz", x=first, mask=_mask())
    (tmp_path / "notes.txt").write_text("ignored")
    samples = load_calibration(tmp_path, TWO)
    assert [sorted(s) for s in samples] == [["mask", "x"], ["mask", "x"]]
    np.testing.assert_array_equal(samples[0]["x"], first)
    np.testing.assert_array_equal(samples[1]["x"], second)
    assert samples[1]["mask"].shape == (1, 6, 7, 2)


def test_npy_folder_for_a_one_input_model(tmp_path: Path) -> None:
    array = _image()
    np.save(tmp_path / "0001.npy", array)
    samples = load_calibration(str(tmp_path), ONE)
    assert len(samples) == 1 and list(samples[0]) == ["x"]
    np.testing.assert_array_equal(samples[0]["x"], array)


def test_npy_refused_for_a_two_input_model(tmp_path: Path) -> None:
    np.save(tmp_path / "0001.npy", _image())
    message = _error(tmp_path, TWO)
    assert "is a .npy file, but the model has 2 inputs" in message
    assert str(tmp_path / "0001.npy") in message
    assert ".npz" in message and "'x': x_array, 'mask': mask_array" in message


def test_missing_folder(tmp_path: Path) -> None:
    message = _error(tmp_path / "nope", ONE)
    assert "does not exist" in message and str(tmp_path / "nope") in message
    assert "--calibration a folder of .npz files" in message


def test_empty_folder_names_the_inputs(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("no samples here")
    message = _error(tmp_path, TWO)
    assert "holds no .npz or .npy files" in message and str(tmp_path) in message
    assert f"np.savez({str(tmp_path / '0001.npz')!r}, **{{'x': x_array, 'mask': mask_array}})" in message


def test_wrong_name(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=_image(), masks=_mask())
    message = _error(folder, TWO)
    assert "unknown ['masks'], missing ['mask']" in message
    assert str(folder / "0001.npz") in message
    assert "named exactly ['x', 'mask']" in message


def test_missing_name(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=_image())
    message = _error(folder, TWO)
    assert "unknown none, missing ['mask']" in message and str(folder / "0001.npz") in message


def test_wrong_dtype(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=_image().astype(np.float64))
    message = _error(folder, ONE)
    assert "'x' is float64, expected float32" in message and str(folder / "0001.npz") in message
    assert "array.astype(np.float32)" in message


def test_wrong_rank(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=np.zeros((3, 4, 5), np.float32))
    message = _error(folder, ONE)
    assert "'x' has rank 3 (shape [3, 4, 5]), expected rank 4: [1, 3, 'h', 'w']" in message
    assert str(folder / "0001.npz") in message and "an array of shape [1, 3, 'h', 'w']" in message


def test_wrong_fixed_dim(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=np.zeros((1, 4, 8, 8), np.float32))
    message = _error(folder, ONE)
    assert "'x' has size 4 on axis 1 (shape [1, 4, 8, 8]), expected 3: [1, 3, 'h', 'w']" in message
    assert str(folder / "0001.npz") in message


def test_inconsistent_symbolic_dim(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=_image(h=4, w=5), mask=_mask(h=6, w=5))
    message = _error(folder, TWO)
    assert "dim 'h' is 4 in calibration input 'x' (axis 2) but 6 in 'mask' (axis 1 of [1, 'h', 'w', None])" in message
    assert str(folder / "0001.npz") in message and "same size within a sample" in message


def test_none_dims_and_fresh_symbols_per_sample_accept_any_size() -> None:
    samples = [{"x": _image(h=2, w=3), "mask": np.zeros((1, 2, 3, 9), bool)},
               {"x": _image(h=8, w=1), "mask": _mask(h=8, w=1)}]
    assert len(load_calibration(samples, TWO)) == 2


def test_corrupt_file(tmp_path: Path) -> None:
    (tmp_path / "x.npz").write_bytes(b"\x00garbage, not numpy\xff" * 10)
    message = _error(tmp_path, ONE)
    assert "cannot read" in message and str(tmp_path / "x.npz") in message
    assert "numpy.savez" in message and "Traceback" not in message


def test_truncated_npz(tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", x=_image())
    data = (tmp_path / "x.npz").read_bytes()
    (tmp_path / "x.npz").write_bytes(data[: len(data) // 2])
    message = _error(tmp_path, ONE)
    assert "cannot read" in message and str(tmp_path / "x.npz") in message


def test_npy_content_in_an_npz_file(tmp_path: Path) -> None:
    with open(tmp_path / "x.npz", "wb") as file:
        np.save(file, _image())
    message = _error(tmp_path, ONE)
    assert "it is a .npy array, not a .npz archive" in message and str(tmp_path / "x.npz") in message


def test_object_arrays_are_not_unpickled(tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", x=np.array([{"a": 1}], dtype=object))
    message = _error(tmp_path, ONE)
    assert "cannot read" in message and "without object arrays" in message


def test_too_few_samples(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path, x=_image())
    message = _error(folder, ONE, minimum=3)
    assert "found 1 calibration sample, need at least 3" in message and str(folder) in message
    assert f"Add more samples, e.g. np.savez({str(folder / '0002.npz')!r}, **{{'x': x_array}})" in message


def test_iterable_of_feeds_dicts() -> None:
    images = [_image(seed=1), _image(h=2, w=2, seed=2)]
    samples = load_calibration(({"x": image} for image in images), ONE, minimum=2)
    assert len(samples) == 2
    np.testing.assert_array_equal(samples[1]["x"], images[1])
    ids = load_calibration([{"ids": [[1, 2, 3]]}], [TensorSpec("ids", "int64", [1, "seq"])])
    assert isinstance(ids[0]["ids"], np.ndarray) and ids[0]["ids"].tolist() == [[1, 2, 3]]


def test_iterable_sample_is_named_by_index() -> None:
    message = _error([{"x": _image()}, {"y": _image()}], ONE)
    assert "(at sample 1)" in message and "unknown ['y'], missing ['x']" in message


def test_non_mapping_element_names_its_index() -> None:
    message = _error([{"x": _image()}, _image()], ONE)
    assert "calibration sample 1 is of type ndarray, not a mapping" in message and "(at sample 1)" in message
    assert "{input_name: array}" in message


def test_a_single_feeds_dict_is_refused() -> None:
    message = _error({"x": _image()}, ONE)
    assert "one feeds dict, not an iterable" in message and "[feeds]" in message
