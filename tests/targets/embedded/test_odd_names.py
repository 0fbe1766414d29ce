"""ONNX names that are not C identifiers (or are C keywords) still give a header that compiles and an example that
runs: identifiers are cleaned and made unique, strings escaped, output files named as `edgepack run -o` names them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

import edgepack
from edgepack.runtime import Session
from edgepack.targets.embedded.c_api import c_identifier
from edgepack.targets.embedded.example_run import build_example, output_file, read_library, run_example

from .library_builds import TOLERANCE, LibraryBuilds, relative_error


def odd_names_model(path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["image:0"], ["scores/relu*/"], name="relu"),
             helper.make_node("Neg", ["image:0"], ["Scores.relu"], name="neg")]
    graph = helper.make_graph(nodes, "odd", [helper.make_tensor_value_info("image:0", TensorProto.FLOAT, [1, 6])],
                              [helper.make_tensor_value_info("scores/relu*/", TensorProto.FLOAT, [1, 6]),
                               helper.make_tensor_value_info("Scores.relu", TensorProto.FLOAT, [1, 6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def test_c_identifiers_avoid_digits_first_and_keywords() -> None:
    assert c_identifier("3x") == "m_3x"
    assert c_identifier("int") == "m_int"
    assert c_identifier("/model/x:0") == "model_x_0"


def test_odd_names_compile_and_run_under_qemu(builds: LibraryBuilds, tmp_path: Path) -> None:
    bundle = edgepack.build(odd_names_model(tmp_path / "int.onnx"), profile="raspberry-pi",
                            output_dir=tmp_path / "dist").bundle_dir
    library = read_library(bundle)
    assert library.name == "m_int"
    header = (bundle / "include" / "m_int.h").read_text()
    assert "float *m_int_input_image_0_data(m_int *model);" in header
    assert "const float *m_int_output_scores_relu_data(const m_int *model);" in header
    assert "const float *m_int_output_scores_relu_2_data(const m_int *model);" in header
    assert output_file("scores/relu*/") == "scores_relu__.npy"
    feeds = {"image:0": np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 6)}
    actual = run_example(library, build_example(library, tmp_path / "build"), feeds).outputs
    for key, value in Session(bundle, providers=["reference"]).run(feeds).items():
        assert relative_error(value, actual[key]) <= TOLERANCE, key
