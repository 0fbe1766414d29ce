"""Every user error: a one-paragraph message naming what, where and how to fix it, a non-zero exit, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import samples


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
           opsets: list[onnx.OperatorSetIdProto] | None = None,
           initializers: list[onnx.TensorProto] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers or [])
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _add_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "a"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "b"])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", "c"])
    return _save(_model([helper.make_node("Add", ["x", "y"], ["z"], name="add")], [x, y], [z]), path)


def assert_user_error(result, *fragments: str) -> None:
    assert result.code == 2, result
    assert "Traceback" not in result.err
    assert result.message.startswith("error: ")
    assert "\n" not in result.message, "the error must be one paragraph"
    for fragment in fragments:
        assert fragment in result.message, (fragment, result.message)


def test_missing_file(cli, tmp_path: Path) -> None:
    result = cli("build", tmp_path / "nope.onnx", "--profile", "generic", "-o", tmp_path)
    assert_user_error(result, "nope.onnx' does not exist", "Check the path")


def test_not_a_protobuf(cli, tmp_path: Path) -> None:
    path = tmp_path / "notes.onnx"
    path.write_text("this is a text file, not a model\n" * 20)
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "is not an ONNX model",
                      "not a protobuf", str(path))


def test_truncated_file(cli, tmp_path: Path) -> None:
    data = samples.path("ppocr-cls").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "'cut.onnx' is truncated",
                      f"after {len(data) // 2} bytes", "export it again")


def test_unknown_domain(cli, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = _model([helper.make_node("FastGelu", ["x"], ["y"], name="gelu0", domain="com.example")], [x], [y],
                   [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    path = _save(model, tmp_path / "custom.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "unknown domain 'com.example'",
                      "node 'gelu0'", "standard ONNX ops")


def test_unknown_op(cli, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    path = _save(_model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob")], [x], [y]), tmp_path / "op.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "unknown op 'Frobnicate'", "node 'frob'")


@pytest.mark.parametrize(("spec", "fragment"), [
    ("x", "no input name before '='"),
    ("x=1,two", "dimensions must be integers"),
    ("x=1,0", "dimensions must be positive"),
    ("nope=1,2", "'nope', which is not an input of the model"),
    ("x=1,2,3", "has rank 2"),
    ("x=", "has rank 2"),
    ("x=,", "dimensions must be positive"),
])
def test_bad_input_shape(cli, tmp_path: Path, spec: str, fragment: str) -> None:
    path = _add_model(tmp_path / "add.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path, "--input-shape", spec), fragment)


def test_nothing_after_the_equals_pins_a_scalar_input(cli, tmp_path: Path) -> None:
    """`--input-shape s=` names the scalar input `s` (a pin for every input, as silero-vad's `sr`, in one command)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    scalar = helper.make_tensor_value_info("s", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    path = _save(_model([helper.make_node("Mul", ["x", "s"], ["y"], name="scale")], [x, scalar], [y]),
                 tmp_path / "scale.onnx")
    result = cli("build", path, "-p", "generic", "-o", tmp_path, "--input-shape", "s=")
    assert result.code == 0, result
    manifest = (tmp_path / "scale-generic" / "manifest.json").read_text()
    assert '"name": "s"' in manifest and '"shape": []' in manifest


def test_input_shape_contradicting_a_fixed_dim(cli, tmp_path: Path) -> None:
    result = cli("build", samples.path("ppocr-cls"), "-p", "generic", "-o", tmp_path, "--input-shape", "x=1,4,48,192")
    assert_user_error(result, "input 'x' has the fixed size 3 on axis 1", "--input-shape gives 4")


def test_input_shape_contradicting_the_graph(cli, tmp_path: Path) -> None:
    path = _add_model(tmp_path / "add.onnx")
    result = cli("build", path, "-p", "generic", "-o", tmp_path, "--input-shape", "x=2,3", "--input-shape", "y=2,5")
    assert_user_error(result, "shapes do not fit", "node 'add'", "--input-shape")


def test_external_data_outside_the_model_folder(cli, tmp_path: Path) -> None:
    weights = numpy_helper.from_array(np.ones(4, np.float32), "w")
    weights.data_location = TensorProto.EXTERNAL
    weights.ClearField("raw_data")
    for key, value in {"location": "../secret.bin", "offset": "0", "length": "16"}.items():
        entry = weights.external_data.add()
        entry.key, entry.value = key, value
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    path = _save(_model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], initializers=[weights]),
                 folder / "m.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "'../secret.bin' leaves the model's folder",
                      "tensor 'w'")


def test_bad_profile_key(cli, tmp_path: Path) -> None:
    profile = tmp_path / "mine.toml"
    profile.write_text('name = "mine"\ntarget = "generic"\nproviders = ["reference"]\n[precision]\nweight = "fp32"\n')
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", profile, "-o", tmp_path),
                      "unknown profile key 'precision.weight'", "weights, activations")


def test_bad_profile_value(cli, tmp_path: Path) -> None:
    profile = tmp_path / "mine.toml"
    profile.write_text('name = "mine"\ntarget = "generic"\nproviders = ["toaster"]\n')
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", profile, "-o", tmp_path),
                      "'providers' has the bad value ['toaster']", "'reference', 'cpu', 'neon'")


def test_unknown_target_names_the_built_ones(cli, tmp_path: Path) -> None:
    profile = tmp_path / "mine.toml"
    profile.write_text('name = "mine"\ntarget = "toaster"\nproviders = ["reference"]\n')
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", profile, "-o", tmp_path),
                      "'toaster' target is not built", "'generic'", "'web'", "'ios'", "edgepack profiles")


def test_unavailable_profile_is_refused(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    out = tmp_path / "out"
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", "android", "-o", out),
                      "profile 'android' cannot be built", "javac compiles the AAR", "default-jdk-headless",
                      "edgepack profiles")
    assert not out.exists()


def test_existing_output_without_force(cli, tmp_path: Path) -> None:
    assert cli("build", samples.path("tiny-cnn"), "-p", "generic", "-o", tmp_path).code == 0
    result = cli("build", samples.path("tiny-cnn"), "-p", "generic", "-o", tmp_path)
    assert_user_error(result, "tiny-cnn-generic' already exists", "--force")


def test_tampered_bundle_is_refused(cli, tmp_path: Path) -> None:
    assert cli("build", samples.path("tiny-cnn"), "-p", "generic", "-o", tmp_path).code == 0
    bundle = tmp_path / "tiny-cnn-generic"
    data = bytearray((bundle / "model.onnx").read_bytes())
    data[-1] ^= 0xFF
    (bundle / "model.onnx").write_bytes(bytes(data))
    assert_user_error(cli("inspect", bundle), "'model.onnx' does not match its sha256", "rebuild the bundle")


def test_real_process_exit_code_and_debug_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.onnx")
    plain = subprocess.run([sys.executable, "-m", "edgepack", "build", missing, "-p", "generic"],
                           capture_output=True, text=True)
    assert plain.returncode == 2
    assert "does not exist" in plain.stderr and "Traceback" not in plain.stderr
    debug = subprocess.run([sys.executable, "-m", "edgepack", "--debug", "build", missing, "-p", "generic"],
                           capture_output=True, text=True)
    assert debug.returncode == 2
    assert "Traceback" in debug.stderr and "EdgepackError" in debug.stderr


def test_a_graph_without_nodes_is_refused(cli, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    path = _save(_model([], [x], [x]), tmp_path / "empty.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path / "out"), "graph has no nodes",
                      "outputs (x)", "empty.onnx")
    assert not (tmp_path / "out" / "empty-generic").exists()


def test_a_graph_without_outputs_is_refused(cli, tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    path = _save(_model([helper.make_node("Relu", ["x"], ["y"])], [x], []), tmp_path / "nothing.onnx")
    assert_user_error(cli("build", path, "-p", "generic", "-o", tmp_path), "graph has no outputs")


def test_an_output_folder_that_is_a_file_is_refused_before_any_work(cli, tmp_path: Path) -> None:
    occupied = tmp_path / "dist"
    occupied.write_text("a file where the folder would go")
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", "generic", "-o", occupied),
                      f"the output folder '{occupied}' is a file", "-o")
    assert occupied.read_text() == "a file where the folder would go"


@pytest.mark.parametrize("folder", ["/proc", "/proc/edgepack-out"])
def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(cli, folder: str) -> None:
    """/proc takes no new folder or file, for root too (a read-only filesystem answers alike)."""
    result = cli("build", samples.path("tiny-cnn"), "-p", "generic", "-o", folder)
    assert_user_error(result, "cannot write the bundle into", "writable filesystem", "-o")


def test_profile_all_into_an_output_folder_that_cannot_be_written(cli) -> None:
    assert_user_error(cli("build", samples.path("tiny-cnn"), "-p", "generic,web", "-o", "/proc"),
                      "cannot write the bundle into '/proc'")


INTERRUPT_WHILE_LOADING = """
import sys

class InterruptAtRich:
    def find_spec(self, name, path=None, target=None):
        if name == "rich.console":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, InterruptAtRich())
from edgepack.entry import main
sys.exit(main())
"""


def test_ctrl_c_while_the_command_line_loads_ends_without_a_traceback() -> None:
    """The console script's entry point catches a Ctrl-C that lands while `edgepack.cli` and rich are imported."""
    proc = subprocess.run([sys.executable, "-c", INTERRUPT_WHILE_LOADING], capture_output=True, text=True)
    assert proc.returncode == 130 and proc.stderr == "interrupted\n"
