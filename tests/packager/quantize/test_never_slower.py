"""The never-slower table: int8 forms are used only where `benchmarks/int8_speed.py` measured them faster."""

from __future__ import annotations

import tomllib

import onnx

from edgepack import samples
from edgepack.packager.quantize import quantize
from edgepack.packager.quantize.never_slower import (
    TABLE,
    WORTH_IT,
    op_class,
    slower_in_int8,
    speed_table,
)
from edgepack.targets import TARGETS

SHIPPED_RUNTIMES = sorted({target.runtime.name for target in TARGETS.values() if target.runtime is not None})
"""The runtimes targets' bundles run on, whose int8 speed the table holds."""


def test_every_target_runtime_has_measurements_for_every_op_class() -> None:
    for runtime in SHIPPED_RUNTIMES:
        table = speed_table()[runtime]
        for kind in ("Conv", "DepthwiseConv", "PointwiseConv", "MatMul", "Gemm"):
            assert kind in table and all(ratio > 0 for ratio in table[kind].values()), (runtime, kind)


def test_the_slowest_cpu_kind_measured_decides() -> None:
    """A bundle's device is unknown at build time: a form counts as fast only where every CPU kind measured it so."""
    sections = tomllib.loads(TABLE.read_text())
    for runtime in SHIPPED_RUNTIMES:
        kinds = sections[runtime]
        assert len(kinds) >= 2, f"{runtime}: one CPU kind measured"
        for kind, forms in speed_table()[runtime].items():
            for form, ratio in forms.items():
                assert ratio == max(ops[kind][form] for ops in kinds.values() if form in ops.get(kind, {}))
    # OpenVINO's int8 MatMul: fast with AMX, slower than fp32 on AVX2 alone, so kept in float
    matmul = speed_table()["openvino"]["MatMul"]["static"]
    assert sections["openvino"]["amx_int8"]["MatMul"]["static"] < WORTH_IT < matmul


def test_op_classes_of_ppocr_cls() -> None:
    model = quantize(onnx.load(samples.path("ppocr-cls")), "fp32").model
    initializers = {t.name: t for t in model.graph.initializer}
    kinds = {op_class(node, initializers) for node in model.graph.node}
    assert {"Conv", "DepthwiseConv", "PointwiseConv"} <= kinds


def test_slower_nodes_follow_the_table() -> None:
    model = quantize(onnx.load(samples.path("tiny-transformer")), "fp32").model
    matmuls = {node.name for node in model.graph.node if node.op_type == "MatMul"}
    for runtime in SHIPPED_RUNTIMES:
        for form in ("static", "dynamic"):
            ratio = speed_table()[runtime]["MatMul"].get(form, float("inf"))
            assert (slower_in_int8(model, runtime, form) == matmuls) == (ratio > WORTH_IT), (runtime, form)
    assert slower_in_int8(model, "no-such-runtime", "static") == matmuls
    assert slower_in_int8(model, None, "static") == matmuls


def test_classes_a_form_leaves_in_float_are_not_counted_slower() -> None:
    """Dynamic int8 computes only MatMul/Gemm in int8: PP-OCR cls's Convs keep their int8 weights, and only its
    classifier MatMul is judged, by its dynamic measurement."""
    model = quantize(onnx.load(samples.path("ppocr-cls")), "fp32").model
    initializers = {t.name: t for t in model.graph.initializer}
    kinds = {node.name: op_class(node, initializers) for node in model.graph.node}
    assert "Conv" in kinds.values() and {"MatMul", "Gemm"} & set(kinds.values())
    for runtime in SHIPPED_RUNTIMES:
        table = speed_table()[runtime]
        expected = {name for name, kind in kinds.items() if kind in ("MatMul", "Gemm") and table[kind]["dynamic"] >= 1}
        assert slower_in_int8(model, runtime, "dynamic") == expected, runtime
