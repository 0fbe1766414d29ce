"""The converter's frame around the ops: feature names CoreML accepts (and coremltools' renames), scalar inputs,
static shapes required, and clear errors for what it cannot convert."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from edgepack.runtime.providers.coreml.convert import to_program
from tests.output_error import relative_error

from .mil_cases import FP32_TOLERANCE, one_node


def run_both(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> float:
    expected = PROVIDERS["reference"].compile(model, {}).run(feeds)
    actual = PROVIDERS["coreml"].compile(model, {}).run(feeds)
    assert set(actual) == set(expected)
    return max(relative_error(expected[name], actual[name]) for name in expected)


@pytest.mark.parametrize("names", [("state", "stateN"), ("a.b:0", "out/0")])
def test_feature_names_coremltools_renames_are_followed(names: tuple[str, str]) -> None:
    """`state` is renamed by coremltools when saved; names with punctuation become identifiers."""
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    model = one_node(helper.make_node("Relu", [names[0]], [names[1]]), {names[0]: x})
    assert run_both(model, {names[0]: x}) < FP32_TOLERANCE


def test_scalar_input_is_fed_as_one_element() -> None:
    x, y = np.float32(2.5), np.arange(6, dtype=np.float32).reshape(2, 3)
    model = one_node(helper.make_node("Mul", ["x", "y"], ["z"]), {"x": np.asarray(x), "y": y})
    assert run_both(model, {"x": np.asarray(x), "y": y}) < FP32_TOLERANCE


def test_dynamic_dims_are_refused_with_the_fix() -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n", 3])])
    with pytest.raises(EdgepackError, match="'x' needs a static shape.*--input-shape"):
        to_program(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def test_an_op_without_converter_names_the_node() -> None:
    x = np.ones((2, 2), dtype=np.float32)
    model = one_node(helper.make_node("Det", ["x"], ["y"], name="the_det"), {"x": x})
    assert PROVIDERS["coreml"].capability.refusal(model.graph.node[0], {"": 17}, _values(model)) is not None
    with pytest.raises(EdgepackError, match="no Det op.*node the_det"):
        to_program(model)


def _values(model: onnx.ModelProto):
    from edgepack.runtime.capability import graph_values

    return graph_values(model.graph)


def test_int64_input_is_refused() -> None:
    x = np.ones((2, 2), dtype=np.int64)
    model = one_node(helper.make_node("Identity", ["x"], ["y"]), {"x": x})
    assert "int64" in PROVIDERS["coreml"].capability.refusal(model.graph.node[0], {"": 17}, _values(model))
    with pytest.raises(EdgepackError, match="'x' is int64.*float32, float16 or int32"):
        to_program(model)


@pytest.mark.parametrize("weights", ["fp16", "int8"])
def test_conversion_leaves_no_package_in_the_temporary_folder(weights: str, tmp_path, monkeypatch) -> None:
    """coremltools keeps every converted (and compressed) model in the temporary folder until the process exits;
    the conversion removes them once the bundle's copy is saved."""
    import tempfile

    from edgepack.runtime.providers.coreml.convert import to_mlpackage

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    w = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    model = one_node(helper.make_node("MatMul", ["x", "w"], ["y"]), {"x": np.ones((1, 64), np.float32)},
                     weights={"w": w})
    to_mlpackage(model, tmp_path / "saved.mlpackage", {"weights": weights, "compute_precision": "fp16"})
    assert (tmp_path / "saved.mlpackage" / "Manifest.json").is_file()
    assert list(scratch.iterdir()) == []
