"""Pad on the `cpu` provider against onnxruntime, in every mode: the innermost padded axis with unpadded axes after it
(each element of a row that wide), the last axis padded (audio's reflect pad), outer axes padded (whole rows of the
constant, or rows reflected, repeated or wrapped), negative pads (a crop, which the other modes reflect, repeat or
wrap: onnx crops, then pads), nothing padded, and element sizes of 1 to 8 bytes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import helper, numpy_helper

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

from .sample_plans import sanitized_output

RNG = np.random.default_rng(5)
MODES = ["constant", "reflect", "edge", "wrap"]
CASES = {  # input shape, pads (begins, then ends)
    "inner axis, unpadded axes after it": ((1, 17, 9, 1), [0, 0, 2, 0, 0, 0, 3, 0]),
    "last axis (audio)": ((2, 300), [0, 64, 0, 64]),
    "outer axes and the last": ((3, 4, 5), [1, 2, 0, 2, 0, 3]),
    "outer axis only": ((4, 3, 6), [2, 0, 0, 1, 0, 0]),
    "negative pads": ((5, 8), [-1, 2, 1, -3]),
    "nothing padded": ((3, 4), [0, 0, 0, 0]),
}


def pad_model(shape: tuple[int, ...], pads: list[int], mode: str, dtype: type):
    x = (RNG.standard_normal(shape) * 50).astype(dtype)
    inputs = ["x", "pads"] + (["value"] if mode == "constant" else [])
    inits = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
    if mode == "constant":
        inits.append(numpy_helper.from_array(np.array(7, dtype), "value"))
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Pad", inputs, ["y"], mode=mode)], "g",
                              [helper.make_tensor_value_info("x", elem, shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(CASES))
def test_pad_matches_onnxruntime(case: str, mode: str) -> None:
    shape, pads = CASES[case]
    model, x = pad_model(shape, pads, mode, np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64])
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_of_other_element_sizes_matches_numpy(dtype: type, mode: str) -> None:
    """numpy's pad as the oracle: onnxruntime has no int16 Pad."""
    model, x = pad_model((2, 5, 3), [0, 2, 1, 1, 3, 0], mode, dtype)
    widths = [(0, 1), (2, 3), (1, 0)]
    expected = np.pad(x, widths, mode="constant", constant_values=7) if mode == "constant" else np.pad(x, widths, mode)
    np.testing.assert_array_equal(PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"], expected)


def test_a_reflect_pad_of_an_axis_cropped_to_nothing_is_refused() -> None:
    """A reflect, edge or wrap pad needs input left along each axis once negative pads crop it."""
    model, x = pad_model((3, 4), [0, -4, 0, 2], "reflect", np.float32)
    with pytest.raises(EdgepackError, match="nothing to reflect"):
        PROVIDERS["cpu"].compile(model, {}).run({"x": x})


@pytest.mark.parametrize("mode", MODES)
def test_pad_runs_clean_under_address_and_undefined_sanitizers(mode: str, tmp_path: Path) -> None:
    """Every row's copy, constant and reflected columns stay inside the input and the output, crops included."""
    model, x = pad_model((3, 6, 2), [1, -2, 0, 0, 3, 1], mode, np.float32)
    np.testing.assert_array_equal(sanitized_output(model, x, tmp_path / "pad"), run_onnxruntime(model, {"x": x})["y"])
