"""Build errors of the embedded target, each one paragraph with exit code 2: dynamic dims left unpinned, and ops the
C core lacks (every such node listed)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from edgepack import build
from edgepack.report import SilentReporter
from edgepack.runtime.errors import EdgepackError


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def dynamic_length_model(path: Path, length: str = "length") -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, length])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, length])])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


class StageLog(SilentReporter):
    """A build reporter that keeps the names of the stages that started."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def start(self, stage: str, detail: str = "") -> None:
        self.started.append(stage)


def unsupported_ops_model(path: Path) -> Path:
    nodes = [helper.make_node("RandomNormalLike", ["x"], ["h"], name="add_noise"),
             helper.make_node("ReverseSequence", ["h", "lengths"], ["c"], name="reverse_rows", batch_axis=0,
                              time_axis=1),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "unsupported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor("lengths", TensorProto.INT64, [2], [8, 3])])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_dynamic_dims_fail_the_build_and_say_how_to_pin_them(cli, tmp_path: Path) -> None:
    model = dynamic_length_model(tmp_path / "dynamic.onnx")
    result = cli("build", model, "--profile", "raspberry-pi", "-o", tmp_path / "dist")
    assert result.code == 2
    assert "x [1, 'length']" in result.message and "dynamic dims" in result.message
    assert "--dim length=SIZE" in result.message
    assert "\n" not in result.message and result.message.count("error:") == 1
    assert not (tmp_path / "dist" / "dynamic-raspberry-pi").exists()


def test_dynamic_dims_are_refused_before_any_work(tmp_path: Path) -> None:
    """The refusal comes from the load stage, before slimming or quantizing; a dim exported as `?` (unnamed) is
    pinned with --input-shape, since `--dim ?=SIZE` would pin every unnamed dim at once."""
    model = dynamic_length_model(tmp_path / "dynamic.onnx", length="?")
    log = StageLog()
    with pytest.raises(EdgepackError) as refusal:
        build(model, "raspberry-pi", tmp_path / "dist", reporter=log)
    assert log.started == ["load"]
    assert "--input-shape x=1,SIZE" in refusal.value.paragraph() and "--dim" not in refusal.value.paragraph()


@pytest.mark.parametrize(("flags", "shape"), [(["--input-shape", "x=1,16"], "[1, 16]"),
                                             (["--dim", "length=24"], "[1, 24]")])
def test_pinning_the_dynamic_dim_builds_the_library(cli, tmp_path: Path, flags: list[str], shape: str) -> None:
    """--input-shape fixes the input's shape; --dim pins the named dim over the profile's pins."""
    model = dynamic_length_model(tmp_path / "dynamic.onnx")
    result = cli("build", model, "--profile", "raspberry-pi", "-o", tmp_path / "dist", *flags)
    assert result.code == 0, result.message
    header = (tmp_path / "dist" / "dynamic-raspberry-pi" / "include" / "dynamic.h").read_text()
    assert f'/* input "x": float32 {shape} */' in header


def test_the_batch_pin_fixes_a_leading_dim_whatever_its_name(cli, tmp_path: Path) -> None:
    """A classifier exported with its batch dim named `DynamicDimension.0` builds for a profile that pins batch."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "classifier",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["DynamicDimension.0", 3, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["DynamicDimension.0", 3, 8])])
    model = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "classifier.onnx")
    result = cli("build", model, "--profile", "raspberry-pi", "-o", tmp_path / "dist")
    assert result.code == 0, result.message
    header = (tmp_path / "dist" / "classifier-raspberry-pi" / "include" / "classifier.h").read_text()
    assert '/* input "x": float32 [1, 3, 8] */' in header


def test_ops_the_core_lacks_fail_the_build_with_every_missing_node(cli, tmp_path: Path) -> None:
    model = unsupported_ops_model(tmp_path / "unsupported.onnx")
    result = cli("build", model, "--profile", "raspberry-pi", "-o", tmp_path / "dist")
    assert result.code == 2
    assert "\n" not in result.message
    message = result.message
    assert "the C library cannot be built" in message
    assert "RandomNormalLike (add_noise)" in message and "ReverseSequence (reverse_rows)" in message
    assert "Relu" not in message
    assert not (tmp_path / "dist" / "unsupported-raspberry-pi").exists()


def test_several_profiles_build_in_turn_and_a_failing_one_stops_none(cli, tmp_path: Path) -> None:
    """`--profile generic,raspberry-pi --profile generic`: generic builds (once); raspberry-pi fails on the dynamic
    dim and says why in its row; the exit code says that one failed."""
    model = dynamic_length_model(tmp_path / "dynamic.onnx")
    result = cli("build", model, "--profile", "generic,raspberry-pi", "--profile", "generic", "-o", tmp_path / "dist",
                 "--json")
    rows = json.loads(result.out)["profiles"]
    assert result.code == 2
    assert [(row["profile"], row["built"]) for row in rows] == [("generic", True), ("raspberry-pi", False)]
    assert "dynamic dims" in rows[1]["error"] and "--dim length=SIZE" in rows[1]["error"]
    assert (tmp_path / "dist" / "dynamic-generic" / "manifest.json").is_file()
    assert not (tmp_path / "dist" / "dynamic-raspberry-pi").exists()
