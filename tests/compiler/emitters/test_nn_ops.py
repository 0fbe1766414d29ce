"""MatMul and Gemm by a constant weight, lowered to PackedMatMul with the weight packed at plan time (float32, or
quantized in the same panels): the panel layout, when the lowering takes it (Gemm's bias and a following activation
with it), and the results of the cpu, wasm and neon (qemu) cores against onnxruntime."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.compiler.emitters.nn_ops import (
    NARROW_POSITIONS,
    PACKED_PHASE_OUTPUTS,
    PACKED_PHASE_TAPS,
    PREPACKED_COLUMNS,
    packed_panels,
)
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.native.build import NATIVE
from edgepack.runtime.native.epk import ACTIVATIONS
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime


def matmul_by_weight(a_shape: list[int], weight: np.ndarray) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, a_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(weight, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def op_kinds(model: onnx.ModelProto, shape: list[int], packed_weights: bool = True) -> list[str]:
    return [op.kind for op in lower_to_plan(model, {"x": shape}, packed_weights=packed_weights).ops]


def test_packed_panels_hold_the_columns_in_panels_of_32_and_zeros_past_them() -> None:
    weight = np.random.default_rng(0).standard_normal((5, 70)).astype(np.float32)
    panels = packed_panels(weight)
    assert panels.shape == (3, 5, PREPACKED_COLUMNS)
    for column in range(96):
        panel, offset = divmod(column, PREPACKED_COLUMNS)
        expected = weight[:, column] if column < 70 else np.zeros(5, np.float32)
        np.testing.assert_array_equal(panels[panel, :, offset], expected)


SHAPES = [([5, 3], 37), ([13, 300], 80), ([70, 64], 100), ([2, 7, 33], 64), ([1, 3, 6, 40], 1), ([6, 1], 33)]
"""(A's shape, N): rows just past the gemv limit, a partial last panel, batched A (its rows taken together), a
one-column weight, K of 1."""


@pytest.mark.parametrize(("a_shape", "columns"), SHAPES, ids=[f"{a}x{n}" for a, n in SHAPES])
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_matmul_by_a_packed_weight_matches_onnxruntime(provider: str, a_shape: list[int], columns: int) -> None:
    """On this host's core and on builds with narrower panels than the plan's (wasm 8 columns, NEON 16), which read
    each packed panel as several of their own."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    rng = np.random.default_rng(len(a_shape) * 100 + columns)
    model = matmul_by_weight(a_shape, rng.standard_normal((a_shape[-1], columns)).astype(np.float32))
    assert "PackedMatMul" in op_kinds(model, a_shape)
    x = rng.standard_normal(a_shape).astype(np.float32)
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    expected = run_onnxruntime(model, {"x": x})["y"]
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_few_rows_and_plans_for_webgpu_keep_the_weight_as_it_is() -> None:
    """At most 4 rows of A run as ep_gemv on B's rows in place; a plan WebGPU may run holds no PackedMatMul, which it
    has no shader for."""
    weight = np.ones((8, 40), np.float32)
    assert op_kinds(matmul_by_weight([4, 8], weight), [4, 8]) == ["MatMul"]
    assert op_kinds(matmul_by_weight([16, 8], weight), [16, 8], packed_weights=False) == ["MatMul"]


@pytest.mark.parametrize(("rows", "kinds"), [(4, ["Gemm", "Gemm", "MatMul", "MatMul"]), (8, ["PackedMatMul"] * 4)])
def test_nodes_sharing_a_weight_share_its_transposed_and_packed_copy(rows: int, kinds: list[str]) -> None:
    """Two Gemm (transB) and two MatMul nodes on one weight each: the plan holds one transposed (4 rows) or packed
    copy of each (an unrolled LSTM's 80 Gemms on 4 weights once made a 274 MB plan of a 19 MB model), and computes as
    onnxruntime."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Gemm", ["x", "g"], ["g1"], transB=1),
             helper.make_node("Gemm", ["g1", "g"], ["g2"], transB=1),
             helper.make_node("MatMul", ["g2", "m"], ["m1"]), helper.make_node("MatMul", ["m1", "m"], ["y"])]
    weights = [numpy_helper.from_array(rng.standard_normal((24, 24)).astype(np.float32), name) for name in "gm"]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 24])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 24])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    plan = lower_to_plan(model, {"x": [rows, 24]})
    assert [op.kind for op in plan.ops] == kinds
    assert plan.ops[0].inputs[1] == plan.ops[1].inputs[1] and plan.ops[2].inputs[1] == plan.ops[3].inputs[1]
    assert sum(tensor.data is not None for tensor in plan.tensors) == 2
    x = rng.standard_normal((rows, 24)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"], expected, rtol=1e-5,
                               atol=1e-5 * np.abs(expected).max())


def gemm_by_weight(rows: int, trans_b: int, bias_shape: tuple[int, ...] | None, then_relu: bool = False,
                   **attributes: float) -> onnx.ModelProto:
    """Gemm of x [rows, 40] by a constant 40 x 70 weight (stored 70 x 40 with transB), with a constant C of
    `bias_shape`, then a Relu if asked."""
    rng = np.random.default_rng(rows + trans_b)
    weight = rng.standard_normal((70, 40) if trans_b else (40, 70)).astype(np.float32)
    constants = [numpy_helper.from_array(weight, "w")]
    inputs = ["x", "w"]
    if bias_shape is not None:
        constants.append(numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "c"))
        inputs.append("c")
    nodes = [helper.make_node("Gemm", inputs, ["h" if then_relu else "y"], transB=trans_b, **attributes)]
    if then_relu:
        nodes.append(helper.make_node("Relu", ["h"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 40])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


GEMMS = {"transB, bias of N, Relu": (1, (70,), True), "bias of 1 x N": (0, (1, 70), False), "no bias": (1, None, False)}


@pytest.mark.parametrize("case", list(GEMMS))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_gemm_by_a_packed_weight_with_bias_and_activation(provider: str, case: str) -> None:
    """Gemm by a constant weight lowers to PackedMatMul, the bias (C) added per column and a following Relu fused."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    trans_b, bias_shape, then_relu = GEMMS[case]
    model = gemm_by_weight(9, trans_b, bias_shape, then_relu)
    ops = lower_to_plan(model, {"x": [9, 40]}).ops
    assert [op.kind for op in ops] == ["PackedMatMul"]
    assert ops[0].params[1] == ACTIVATIONS["Relu" if then_relu else "None"]
    x = np.random.default_rng(4).standard_normal((9, 40)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    actual = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_gemm_forms_packed_matmul_does_not_take_stay_gemm() -> None:
    """alpha, beta, a C of M x N, or 4 rows keep the Gemm op."""
    assert op_kinds(gemm_by_weight(9, 1, (70,), alpha=2.0), [9, 40]) == ["Gemm"]
    assert op_kinds(gemm_by_weight(9, 1, (70,), beta=0.5), [9, 40]) == ["Gemm"]
    assert op_kinds(gemm_by_weight(9, 0, (9, 70)), [9, 40]) == ["Gemm"]
    assert op_kinds(gemm_by_weight(4, 0, (70,)), [4, 40]) == ["Gemm"]


def dequantized_weight_model(form: str, rows: int = 11) -> onnx.ModelProto:
    """x [rows, 48] by a constant 48 x 70 weight in the quantized `form` of QUANTIZED_FORMS (DequantizeLinear of int8
    or int4, or a Cast of float16), through MatMul, or Gemm with the weight stored 70 x 48 (transB) and a bias."""
    rng = np.random.default_rng(len(form))
    k, n = 48, 70
    gemm = form.startswith("Gemm")
    shape = (n, k) if gemm else (k, n)
    nodes, constants = [], []
    if "float16" in form and "scales" not in form:
        constants.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float16), "h"))
        nodes.append(helper.make_node("Cast", ["h"], ["w"], to=TensorProto.FLOAT))
    else:
        int4 = "int4" in form
        values = rng.integers(-8 if int4 else -127, 8 if int4 else 128, shape)
        k_axis = 1 if gemm else 0
        attributes: dict[str, int] = {}
        if "blocked" in form:
            scale_shape = tuple(k // 16 if a == k_axis else d for a, d in enumerate(shape))
            attributes = {"axis": k_axis, "block_size": 16}
        elif "per row" in form:
            scale_shape, attributes = (k,), {"axis": 0}
        elif "per tensor" in form:
            scale_shape = ()
        else:
            scale_shape, attributes = (n,), {"axis": 1 - k_axis}
        scale_type = np.float16 if "float16 scales" in form else np.float32
        scale = (rng.uniform(0.5, 2.0, scale_shape) / 64).astype(scale_type)
        constants += [numpy_helper.from_array(values.astype(np.int8), "q") if not int4 else
                      helper.make_tensor("q", TensorProto.INT4, shape, values.reshape(-1).tolist()),
                      numpy_helper.from_array(scale, "s")]
        nodes.append(helper.make_node("DequantizeLinear", ["q", "s"], ["d" if scale_type == np.float16 else "w"],
                                      **attributes))
        if scale_type == np.float16:
            nodes.append(helper.make_node("Cast", ["d"], ["w"], to=TensorProto.FLOAT))
    if gemm:
        constants.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "c"))
        nodes.append(helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1))
    else:
        nodes.append(helper.make_node("MatMul", ["x", "w"], ["y"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


QUANTIZED_FORMS = {
    "int8 per column": ("int8", 1, 48), "int8 per tensor": ("int8", 1, 48), "int8 blocked along K": ("int8", 1, 16),
    "int4 blocked along K": ("int4", 1, 16),
    "float16": ("float16", 0, 0), "int8 float16 scales per column": ("int8", 1, 48),
    "Gemm int8 per column": ("int8", 1, 48), "Gemm int4 blocked along K": ("int4", 1, 16),
}
"""form -> the packed weight's dtype and its (axis, block) words: scales per column are one block of all K rows."""


@pytest.mark.parametrize("form", list(QUANTIZED_FORMS))
@pytest.mark.parametrize("provider", ["cpu", "wasm", "neon"])
def test_quantized_weight_packs_into_panels_and_matches_onnxruntime(provider: str, form: str, tmp_path: Path) -> None:
    """A quantized constant weight keeps its integers (or halves) in PackedMatMul's panels, its scales per column in
    the same panels; each call dequantizes a panel at a time, or the session expands the panels when it opens: both
    give onnxruntime's result on the source model."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    model = dequantized_weight_model(form)
    plan = lower_to_plan(model, {"x": [11, 48]}, expand_weights=False)
    op, = plan.ops
    dtype, axis, block = QUANTIZED_FORMS[form]
    weight = plan.tensors[op.inputs[1]]
    assert op.kind == "PackedMatMul" and weight.dtype == dtype and weight.shape == (3, 48, PREPACKED_COLUMNS)
    assert op.params[-2:] == [axis, block]
    if dtype != "float16":
        assert plan.tensors[op.inputs[3]].shape == (3, 48 // block, PREPACKED_COLUMNS)
    x = np.random.default_rng(5).standard_normal((11, 48)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    (tmp_path / "per-call.epk").write_bytes(epk.write(plan))
    per_call = PROVIDERS[provider].load(tmp_path / "per-call.epk", {}).run({"x": x})["y"]
    expanded = PROVIDERS[provider].compile(model, {}).run({"x": x})["y"]
    np.testing.assert_array_equal(expanded, per_call)
    np.testing.assert_allclose(per_call, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())


def test_scales_that_differ_along_k_keep_the_quantized_matmul() -> None:
    """Per-row scales would take as many floats as the weight in panels: that MatMul keeps its quantized slot."""
    model = dequantized_weight_model("int8 per row")
    op, = lower_to_plan(model, {"x": [11, 48]}, expand_weights=False).ops
    assert op.kind == "MatMul" and len(op.inputs) == 3
    x = np.random.default_rng(6).standard_normal((11, 48)).astype(np.float32)
    expected = run_onnxruntime(model, {"x": x})["y"]
    np.testing.assert_allclose(PROVIDERS["cpu"].compile(model, {}).run({"x": x})["y"], expected, rtol=1e-5,
                               atol=1e-5 * np.abs(expected).max())


def test_loader_refuses_panel_scales_per_axis() -> None:
    """Scales per index of one axis of the [P, K, 32] panels (which the quantized slots of other ops take) would
    not dequantize a panel at a time: the loader refuses them before any run."""
    plan = lower_to_plan(dequantized_weight_model("int8 per column"), {"x": [11, 48]}, expand_weights=False)
    op, = plan.ops
    NativeSession(epk.write(plan))
    scale = plan.tensors[op.inputs[3]]
    scale.shape, scale.data = (3,), np.ones(3, np.float32)
    op.params[-2:] = [0, 0]
    with pytest.raises(NativeError) as caught:
        NativeSession(epk.write(plan))
    assert "scales blocked along K" in str(caught.value)


def test_the_copied_stride_two_panel_bounds_are_conv_c_s() -> None:
    """The plan sizes a stride-2 conv's scratch for a copied panel where conv.c copies one: both read one bound (a
    core copying where the plan did not size for it refuses the plan)."""
    source = (NATIVE / "kernels" / "conv.c").read_text()
    for name, value in (("PACKED_PHASE_TAPS", PACKED_PHASE_TAPS), ("PACKED_PHASE_OUTPUTS", PACKED_PHASE_OUTPUTS)):
        assert re.search(rf"^#define {name} (\d+)$", source, re.MULTILINE).group(1) == str(value)


def test_the_narrow_conv_bound_is_conv_h_s() -> None:
    """The plan sizes a conv's scratch for dot products where the core runs them: both read one bound."""
    source = (NATIVE / "kernels" / "conv.h").read_text()
    assert re.search(r"^#define EP_CONV_NARROW_POSITIONS (\d+)$", source, re.MULTILINE).group(1) == \
        str(NARROW_POSITIONS)
