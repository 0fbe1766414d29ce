"""Precision overrides on the command line: --weights, --exclude-op, --exclude-node, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import onnx

from edgepack import samples
from tests.sdk.test_cli_errors import assert_user_error

MODEL = "tiny-transformer"


def build_json(cli, tmp_path: Path, *options: str) -> dict:
    result = cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--force", "--json",
                 "--accept-fidelity-loss", *options)
    assert result.code == 0, result.err
    report = json.loads(result.out)
    return json.loads((Path(report["bundle_dir"]) / "manifest.json").read_text())


def ops(manifest: dict, tmp_path: Path) -> list[str]:
    model = onnx.load(tmp_path / f"{Path(samples.path(MODEL)).stem}-generic" / "model.onnx")
    return [node.op_type for node in model.graph.node]


def test_weights_override_lowers_the_generic_bundle(cli, tmp_path: Path) -> None:
    manifest = build_json(cli, tmp_path, "--weights", "int8")
    quantization = manifest["quantization"]
    assert quantization["weights"] == "int8" and quantization["quantized_tensors"] > 0
    assert ops(manifest, tmp_path).count("DequantizeLinear") == quantization["quantized_tensors"]
    assert manifest["profile"]["precision"]["weights"] == "int8"


def test_exclude_op_keeps_that_op_in_fp32(cli, tmp_path: Path) -> None:
    everything = build_json(cli, tmp_path, "--weights", "int8")["quantization"]
    without_matmul = build_json(cli, tmp_path, "--weights", "int8", "--exclude-op", "MatMul")["quantization"]
    assert without_matmul["excluded"], "no MatMul was excluded"
    assert without_matmul["quantized_nodes"] == everything["quantized_nodes"] - len(without_matmul["excluded"])
    assert not set(without_matmul["excluded"]) & set(without_matmul["kept_in_float"])


def test_exclude_node_by_name(cli, tmp_path: Path) -> None:
    everything = build_json(cli, tmp_path, "--weights", "int8")["quantization"]
    excluded = build_json(cli, tmp_path, "--weights", "int8", "--exclude-node", "l0.q_matmul")["quantization"]
    assert excluded["excluded"] == ["l0.q_matmul"]
    assert excluded["quantized_nodes"] == everything["quantized_nodes"] - 1


def test_unknown_node_and_precision_are_user_errors(cli, tmp_path: Path) -> None:
    assert_user_error(cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--weights", "int8",
                          "--exclude-node", "no_such_node"), "no_such_node", "--exclude-node")
    assert_user_error(cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--weights", "int3"),
                      "'int3' is not a precision", "int8")


def test_int4_needs_opset_21(cli, tmp_path: Path) -> None:
    profile = tmp_path / "old.toml"
    profile.write_text('name = "old"\ntarget = "generic"\nproviders = ["reference"]\n[opset]\nmin = 13\nmax = 17\n')
    assert_user_error(cli("build", samples.path(MODEL), "-p", profile, "-o", tmp_path, "--weights", "int4"),
                      "need opset 21", "opset 17 at most")
