"""Precision overrides on the command line: --weights, --activations, --exclude-op, --exclude-node, --calibration,
and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

import edgepack
from edgepack import samples
from edgepack.packager.quantize.never_slower import WORTH_IT, op_class, speed_table
from edgepack.samples.tiny import tiny_transformer
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


def calibration_folder(tmp_path: Path, count: int = 3, name: str = "tokens", dtype: str = "float32",
                       shape: tuple[int, ...] = (1, 16, 64)) -> Path:
    folder = tmp_path / "calibration"
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for index in range(count):
        np.savez(folder / f"{index:04d}.npz", **{name: rng.standard_normal(shape).astype(dtype)})
    return folder


def int8_build(cli, tmp_path: Path, *options: str | Path):
    return cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path / "out", "--force", "--weights", "int8",
               "--activations", "int8", *options)


def test_calibrated_weight_only_build_rounds_with_compensated_errors(cli, tmp_path: Path) -> None:
    folder = calibration_folder(tmp_path)
    nearest = build_json(cli, tmp_path, "--weights", "int8")["quantization"]
    compensated = build_json(cli, tmp_path, "--weights", "int8", "--calibration", folder)
    assert nearest["weight_rounding"].startswith("nearest") and "--calibration" in nearest["weight_rounding"]
    assert compensated["quantization"]["weight_rounding"].startswith("error-compensated on 3 calibration samples")
    assert compensated["quantization"]["activations"] == "fp32"
    assert compensated["fidelity"]["inputs"] == "the first 3 calibration samples"
    assert compensated["quantization"]["quantized_tensors"] == nearest["quantized_tensors"]


def test_calibrated_int8_build_is_static_and_verified_on_the_calibration_samples(cli, tmp_path: Path) -> None:
    result = int8_build(cli, tmp_path, "--calibration", calibration_folder(tmp_path), "--json")
    assert result.code == 0, result.err
    bundle = Path(json.loads(result.out)["bundle_dir"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["fidelity"]["inputs"] == "the first 3 calibration samples"
    assert manifest["fidelity"]["tolerance"]["min_cosine"] == 0.99
    assert_never_slower(manifest, bundle, "static int8 QDQ, minmax ranges from 3 ", "QuantizeLinear")


def assert_never_slower(manifest: dict, bundle: Path, int8_form: str, int8_op: str) -> None:
    """The build timed its int8 model against fp32 on onnxruntime: when no class or not the whole model was faster
    in int8 (at most WORTH_IT of fp32's latency), it kept fp32 compute on int8 weights; otherwise the whole model ran
    faster, it computes in int8, and each node kept in fp32 for speed belongs to a class measured not faster (at
    build time, or in int8_speed.toml)."""
    quantization = manifest["quantization"]
    ratio = quantization["int8_over_fp32"]
    model = onnx.load(bundle / "model.onnx")
    op_types = {node.op_type for node in model.graph.node}
    if quantization["activation_form"].startswith("fp32 compute on int8 weights"):
        assert ratio is None or ratio > WORTH_IT
        assert {int8_op, "QuantizeLinear", "MatMulInteger"}.isdisjoint(op_types) and "DequantizeLinear" in op_types
        assert quantization["kept_for_speed"] == []
        return
    assert isinstance(ratio, float) and 0 < ratio <= WORTH_IT
    assert quantization["activation_form"].startswith(int8_form) and int8_op in op_types
    form = "static" if int8_op == "QuantizeLinear" else "dynamic"
    table = {kind: forms.get(form, 0.0) for kind, forms in speed_table()["onnxruntime"].items()}
    ratios = quantization["tuned"] or table
    initializers = {t.name: t for t in model.graph.initializer}
    kinds = {node.name: op_class(node, initializers) for node in model.graph.node}
    assert all(ratios[kinds[name]] > WORTH_IT for name in quantization["kept_for_speed"])


def test_tune_times_int8_against_fp32_on_the_targets_runtime(cli, tmp_path: Path) -> None:
    result = int8_build(cli, tmp_path, "--calibration", calibration_folder(tmp_path), "--tune", "--json")
    assert result.code == 0, result.err
    bundle = Path(json.loads(result.out)["bundle_dir"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    tuned = manifest["quantization"]["tuned"]
    assert set(tuned) == {"MatMul"} and tuned["MatMul"] > 0
    assert_never_slower(manifest, bundle, "static int8 QDQ", "QuantizeLinear")


def test_int8_activations_without_calibration_are_dynamic(cli, tmp_path: Path) -> None:
    result = int8_build(cli, tmp_path, "--json")
    assert result.code == 0, result.err
    bundle = Path(json.loads(result.out)["bundle_dir"])
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert_never_slower(manifest, bundle, "dynamic int8", "MatMulInteger")


@pytest.mark.parametrize(("folder", "fragments"), [
    (lambda tmp: tmp / "missing", ["does not exist", "missing"]),
    (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", ["no .npz or .npy", "tokens"]),
    (lambda tmp: calibration_folder(tmp, name="words"), ["words", "tokens", "0000.npz"]),
    (lambda tmp: calibration_folder(tmp, dtype="float64"), ["float64", "float32", "astype"]),
    (lambda tmp: calibration_folder(tmp, shape=(1, 16, 65)), ["65", "64", "axis 2"]),
])
def test_calibration_input_errors_are_one_paragraph(cli, tmp_path: Path, folder, fragments: list[str]) -> None:
    assert_user_error(int8_build(cli, tmp_path, "--calibration", folder(tmp_path)), *fragments)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_calibration_option_errors(cli, tmp_path: Path) -> None:
    folder = calibration_folder(tmp_path)
    assert_user_error(cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--calibration", folder),
                      "weights are fp32 and activations fp32", "--weights int8")
    assert_user_error(cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--weights", "fp16",
                          "--calibration", folder), "weights are fp16", "int8/int4")
    assert_user_error(int8_build(cli, tmp_path, "--calibration", folder, "--calibration-method", "kl"),
                      "'kl' is not a calibration method", "entropy")
    assert_user_error(cli("build", samples.path(MODEL), "-p", "generic", "-o", tmp_path, "--activations", "int8"),
                      "int8 activations need int8 weights", "--weights int8")


def test_int8_compute_that_is_faster_is_kept(tmp_path: Path) -> None:
    """At realistic width (hidden 384) dynamic int8 MatMuls run several times faster than fp32 on onnxruntime:
    the build times that and ships them."""
    path = tmp_path / "transformer-384.onnx"
    onnx.save(tiny_transformer(hidden=384, layers=2), path)
    result = edgepack.build(path, "generic", tmp_path / "out", weights="int8", activations="int8",
                            accept_fidelity_loss=True)
    quantization = result.manifest["quantization"]
    assert quantization["int8_over_fp32"] < 0.8
    assert_never_slower(result.manifest, result.bundle_dir, "dynamic int8", "MatMulInteger")
