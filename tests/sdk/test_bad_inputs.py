"""The bad-input catalogue: hostile or broken models built over an older bundle of the same name, with --force. Each
must end in a one-paragraph error (exit 2, no traceback) that names what and where and says how to fix it, leave no
partial output, and leave the older bundle as it was."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
Y_ANY = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])


def model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
          initializers: tuple[onnx.TensorProto, ...] = (), opset: int = 17, domains: tuple[str, ...] = ()) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   *(helper.make_opsetid(d, 1) for d in domains)])
    made.ir_version = 8
    return made.SerializeToString()


def good() -> bytes:
    return model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y])


def if_with_mismatched_branches() -> bytes:
    then = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"]), helper.make_node("Relu", ["x"], ["f"])], "else",
                              [], [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ef"])
    condition = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    return model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], [X, condition], [Y])


def without_opset_import() -> bytes:
    made = onnx.load_from_string(good())
    del made.opset_import[:]
    return made.SerializeToString()


def missing_external_data() -> bytes:
    weight = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    weight.data_location = TensorProto.EXTERNAL
    weight.ClearField("raw_data")
    for key, value in (("location", "missing.bin"), ("offset", "0"), ("length", "24")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], (weight,))


CASES: dict[str, tuple[Callable[[], bytes], tuple[str, ...]]] = {
    "zero bytes": (lambda: b"", ("is not an ONNX model", "no graph")),
    "random bytes": (lambda: np.random.default_rng(0).bytes(4096), ("is not an ONNX model", "not a protobuf")),
    "JSON named .onnx": (lambda: json.dumps({"model": "x"}).encode(), ("is not an ONNX model", "exported by")),
    "truncated protobuf": (lambda: good()[:len(good()) // 2], ("model.onnx", "export it again")),
    "a cycle": (lambda: model([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                               helper.make_node("Relu", ["a"], ["y"])], [X], [Y]), ("topologically sorted",)),
    "two nodes write one output": (lambda: model([helper.make_node("Relu", ["x"], ["y"]),
                                                  helper.make_node("Neg", ["x"], ["y"])], [X], [Y]),
                                   ("'y' has been used as output names multiple times",)),
    "an input no node makes": (lambda: model([helper.make_node("Add", ["x", "ghost"], ["y"])], [X], [Y]),
                               ("input 'ghost'",)),
    "an output no node makes": (lambda: model([helper.make_node("Relu", ["x"], ["z"])], [X], [Y]),
                                ("Graph output 'y' is not an output of any node",)),
    "If branches with different outputs": (if_with_mismatched_branches, ("different number of outputs",)),
    "no opset import": (without_opset_import, ("must specify opset_import",)),
    "an opset from the future": (lambda: model([helper.make_node("Relu", ["x"], ["y"])], [X], [Y], opset=40),
                                 ("opset 40 is newer than any this onnx knows", "Export the model at an opset from")),
    "a contrib op": (lambda: model([helper.make_node("FancyAttention", ["x"], ["y"], domain="com.microsoft")],
                                   [X], [Y], domains=("com.microsoft",)), ("FancyAttention", "com.microsoft")),
    "an unknown op": (lambda: model([helper.make_node("Frobnicate", ["x"], ["y"], name="frob")], [X], [Y]),
                      ("Frobnicate", "frob")),
    "a dim of 2^62": (lambda: model([helper.make_node("Relu", ["x"], ["y"])],
                                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**62, 3])], [Y_ANY]),
                      ("input 'x'", "too many to generate", "--input-shape")),
    "a Reshape whose product overflows int64": (
        lambda: model([helper.make_node("Reshape", ["x", "shape"], ["y"])], [X], [Y_ANY],
                      (numpy_helper.from_array(np.array([2**62, 2**62], np.int64), "shape"),)),
        ("overflow in Reshape",)),
    "no nodes": (lambda: model([], [X], [X]), ("graph has no nodes",)),
    "no outputs": (lambda: model([helper.make_node("Relu", ["x"], ["y"])], [X], []), ("graph has no outputs",)),
    "external data that is missing": (missing_external_data, ("'missing.bin' does not exist",)),
    "a string input": (lambda: model([helper.make_node("Identity", ["s"], ["y"])],
                                     [helper.make_tensor_value_info("s", TensorProto.STRING, [2])],
                                     [helper.make_tensor_value_info("y", TensorProto.STRING, [2])]),
                       ("input 's'", "--input NAME=FILE.npy")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_model_fails_cleanly_and_keeps_the_older_bundle(cli, tmp_path: Path, case: str) -> None:
    source, out = tmp_path / "model.onnx", tmp_path / "dist"
    source.write_bytes(good())
    assert cli("build", source, "-p", "generic", "-o", out).code == 0
    old = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    make, fragments = CASES[case]
    source.write_bytes(make())
    result = cli("build", source, "-p", "generic", "-o", out, "--force")
    assert result.code == 2, result
    assert "Traceback" not in result.err and "internal error" not in result.err
    assert result.message.startswith("error: ") and "\n" not in result.message
    for fragment in fragments:
        assert fragment in result.message, (fragment, result.message)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == old
    assert sorted(p.name for p in out.iterdir()) == ["model-generic"]  # no .partial or .old folder left


def test_nan_and_inf_weights_build_with_a_warning(cli, tmp_path: Path) -> None:
    weight = numpy_helper.from_array(np.array([[np.nan, 1, 2], [np.inf, 0, 1]], np.float32), "w")
    source = tmp_path / "nan.onnx"
    source.write_bytes(model([helper.make_node("Add", ["x", "w"], ["y"])], [X], [Y], (weight,)))
    result = cli("build", source, "-p", "generic", "-o", tmp_path / "dist")
    assert result.code == 0
    assert "warning: weights hold NaN or Inf: w (2 of 6 values)" in " ".join(result.err.split())
