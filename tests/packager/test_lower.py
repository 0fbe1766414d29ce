"""The lower stage: each partition's artefact is made once per build and reused by the target and by verify; the
partitioner's CoreML check is that conversion; errors of the plan compiler carry node lists; a plan expands its
quantized weights at open unless that takes it over the profile's memory budget."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest

import edgepack
from edgepack import samples
from edgepack.compiler import lower as compiler_lower
from edgepack.compiler.lower import MissingKernels, lower_to_plan
from edgepack.packager.lower import MEGABYTE, Lowerer, plan_of, session_bytes
from edgepack.packager.partition import Partition, partition
from edgepack.packager.quantize import quantize
from edgepack.profile import load_profile
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.model_file import load_model
from edgepack.runtime.providers import PROVIDERS
from tests.targets.embedded.test_build_errors import unsupported_ops_model


def counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Counts calls of `module.name` (looked up through the module at each call)."""
    calls: list[int] = []
    original = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("name, shapes", [("tiny-cnn", None), ("ppocr-cls", {"x": (1, 3, 48, 192)})])
def test_coreml_conversion_happens_once_per_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                                   shapes: dict[str, tuple[int, ...]] | None) -> None:
    if reason := PROVIDERS["coreml"].missing():
        pytest.skip(reason)
    from edgepack.runtime.providers.coreml import convert

    conversions = counting(monkeypatch, convert, "to_program")
    result = edgepack.build(samples.path(name), "iphone", tmp_path, input_shapes=shapes)
    coreml = [p for p in result.manifest["partitions"] if p["provider"] == "coreml"]
    assert coreml and result.manifest["fidelity"]["passed"]
    assert len(conversions) == len(coreml)


def test_a_plan_is_lowered_once_per_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C library's plan is lowered by the lower stage; verify runs that `.epk`, not the ONNX again."""
    if reason := PROVIDERS["cpu"].missing():
        pytest.skip(reason)
    profile = tmp_path / "host.toml"
    profile.write_text('name = "host"\ntarget = "embedded"\nproviders = ["cpu"]\n[shapes.dims]\nbatch = 1\n')
    lowerings = counting(monkeypatch, compiler_lower, "Lowering")
    result = edgepack.build(samples.path("tiny-cnn"), profile, tmp_path)
    assert result.manifest["partitions"][0]["artifact"].endswith(".epk")
    assert result.manifest["fidelity"]["passed"]
    assert len(lowerings) == 1


def unsupported_chain(folder: Path) -> onnx.ModelProto:
    """RandomNormalLike, then a ReverseSequence that reads it (never reached by the lowering), then a Relu the core
    has."""
    return onnx.load(unsupported_ops_model(folder / "unsupported.onnx"))


def test_missing_kernels_are_a_node_list(tmp_path: Path) -> None:
    with pytest.raises(MissingKernels) as caught:
        lower_to_plan(unsupported_chain(tmp_path))
    assert caught.value.nodes == ["RandomNormalLike (add_noise)", "ReverseSequence (reverse_rows)"]


def test_plan_errors_name_the_product_and_each_missing_op(tmp_path: Path) -> None:
    with pytest.raises(EdgepackError) as caught:
        plan_of(unsupported_chain(tmp_path), "the C library")
    assert caught.value.what.startswith(
        "the C library cannot be built: the C core has no kernel for RandomNormalLike, ReverseSequence")
    assert "2 node(s): RandomNormalLike (add_noise), ReverseSequence (reverse_rows)" in caught.value.what


def test_the_partitioners_coreml_check_is_the_stage_conversion(monkeypatch: pytest.MonkeyPatch) -> None:
    if reason := PROVIDERS["coreml"].missing():
        pytest.skip(reason)
    from edgepack.runtime.providers.coreml import convert

    conversions = counting(monkeypatch, convert, "to_program")
    model = onnx.load(samples.path("tiny-cnn"))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    model = onnx.shape_inference.infer_shapes(model)
    lowerer = Lowerer(load_profile("iphone"), {"coreml": "mlpackage", "neon": "plan"}, "the Swift package")
    try:
        parts = partition(model, ["coreml", "neon"], "neon", lowerer.compiles)
        checked = len(conversions)
        lowered = lowerer.lower(model, parts)
    finally:
        lowerer.close()
    assert [low.form for low in lowered] == ["mlpackage" if p.provider == "coreml" else "plan" for p in parts]
    assert checked >= 1 and len(conversions) == checked


@pytest.mark.parametrize(("provider", "kind"),
                         [("webgpu", "MatMul"), ("wasm", "PackedMatMul"), ("neon", "PackedMatMul")])
def test_a_plan_webgpu_may_run_keeps_its_weights_unpacked(provider: str, kind: str) -> None:
    """WebGPU has no shader for PackedMatMul: a webgpu partition's plan keeps MatMul by the weight as it is."""
    weight = onnx.numpy_helper.from_array(np.ones((8, 40), np.float32), "w")
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [16, 8])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [16, 40])], [weight])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    lowerer = Lowerer(load_profile("web"), {provider: "plan"}, "the web package")
    try:
        lowered, = lowerer.lower(model, [Partition("p0", provider, model)])
    finally:
        lowerer.close()
    assert [op.kind for op in lowered.plan.ops] == [kind]


def quantized_tiny_cnn() -> onnx.ModelProto:
    """tiny-cnn with int8 weights, its batch dim pinned to 1."""
    model = quantize(load_model(samples.path("tiny-cnn")).model, "int8").model
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    return model


def test_quantized_weights_expand_at_open_within_the_memory_budget() -> None:
    plan, note = plan_of(quantized_tiny_cnn(), "the C library", peak_memory_mb=256)
    assert plan.open_ops and not note
    half = session_bytes(plan) / MEGABYTE / 2
    kept, note = plan_of(quantized_tiny_cnn(), "the C library", peak_memory_mb=half)
    assert kept.open_ops == 0 and session_bytes(kept) < session_bytes(plan)
    assert note.startswith("the C library: its quantized weights, expanded to float32") and f"{half:g}" in note
    assert plan_of(quantized_tiny_cnn(), "the web bundle", packed_weights=False)[0].open_ops == 0


def test_a_plan_over_the_memory_budget_is_a_build_warning(tmp_path: Path) -> None:
    profile = replace(load_profile("raspberry-pi"), peak_memory_mb=0.01)
    result = edgepack.build(samples.path("tiny-cnn"), profile=profile, output_dir=tmp_path, verify=False)
    assert any("peak_memory_mb of 0.01; each run dequantizes them instead" in w for w in result.report.warnings)
    plan = (result.bundle_dir / result.manifest["partitions"][0]["artifact"]).read_bytes()
    assert struct.unpack_from("<I", plan, 21 * 4)[0] == 0
