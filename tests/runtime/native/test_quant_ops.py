"""The quantized ops over run-time tensors on the `cpu` provider against onnxruntime, on single-node models:
QuantizeLinear and DequantizeLinear (per tensor, per axis, blocked; int8, uint8, int32; ties and saturation),
DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv (zero points, per-channel scales,
bias, padding, strides, dilations, groups, 1-D). Integer outputs exact, float outputs within 1e-5."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(5)


def single_node(op: str, inputs: dict[str, np.ndarray | None], n_out: int = 1, opset: int = 21,
                constants: tuple[str, ...] = (), **attributes: object) -> onnx.ModelProto:
    """One node reading `inputs` in order (None: an absent optional input); `constants` become initializers."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    outputs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op, names, outputs, **attributes)
    graph_inputs = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
                    for name, value in inputs.items() if value is not None and name not in constants]
    initializers = [numpy_helper.from_array(inputs[name], name) for name in constants]
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_value_info(o, onnx.TypeProto()) for o in outputs],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def check(op: str, inputs: dict[str, np.ndarray | None], n_out: int = 1, opset: int = 21,
          constants: tuple[str, ...] = (), exact_products: bool = False, **attributes: object) -> None:
    """Our cpu core against onnxruntime; with `exact_products`, against onnx's reference implementation: products of
    uint8 by int8 that onnxruntime sums in saturating int16 pairs on CPUs without VNNI (AVX2 alone: up to 16027 off
    a 17-term MatMulInteger on an AMD EPYC), where the spec's sums are exact."""
    model = single_node(op, inputs, n_out, opset, constants, **attributes)
    feeds = {name: value for name, value in inputs.items() if value is not None and name not in constants}
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)
    if exact_products:
        outputs = ReferenceEvaluator(model).run(None, feeds)
        expected = {out.name: np.asarray(value) for out, value in zip(model.graph.output, outputs)}
    else:
        expected = run_onnxruntime(model, feeds)
    for name, want in expected.items():
        got = ours[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if want.dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)


def ints(dtype: str, shape: tuple[int, ...], low: int | None = None, high: int | None = None) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min if low is None else low, (info.max if high is None else high) + 1,
                        shape).astype(dtype)


def scales(shape: tuple[int, ...]) -> np.ndarray:
    return RNG.uniform(0.01, 0.5, shape).astype(np.float32)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantize_per_tensor_ties_and_saturation(dtype: str) -> None:
    x = np.concatenate([np.arange(-300, 300, 0.5), RNG.normal(0, 100, 192),
                        [np.nan, np.inf, -np.inf, 1e30, -1e30, 4194304.5, -8388609.0, 2.5]]).astype(np.float32)
    x = x.reshape(8, -1)
    check("QuantizeLinear", {"x": x, "s": np.array(1.0, np.float32), "z": np.array(3, dtype)})
    check("QuantizeLinear", {"x": x, "s": np.array(0.5, np.float32), "z": np.array(-7 if dtype == "int8" else 200,
                                                                                    dtype)})


def test_quantize_without_zero_point_is_uint8() -> None:
    x = RNG.normal(0, 20, (4, 6)).astype(np.float32)
    check("QuantizeLinear", {"x": x, "s": np.array(0.25, np.float32)})
    check("QuantizeLinear", {"x": np.array(-3.3, np.float32), "s": np.array([0.5], np.float32)})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantize_and_dequantize_per_axis(axis: int, dtype: str) -> None:
    x = RNG.normal(0, 10, (3, 4, 5)).astype(np.float32)
    length = x.shape[axis]
    check("QuantizeLinear", {"x": x, "s": scales((length,)), "z": ints(dtype, (length,))}, axis=axis)
    check("DequantizeLinear", {"x": ints(dtype, x.shape), "s": scales((length,)), "z": ints(dtype, (length,))},
          axis=axis)


@pytest.mark.parametrize("block", [2, 3])
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_and_dequantize_blocked(axis: int, block: int) -> None:
    x = RNG.normal(0, 10, (5, 7)).astype(np.float32)
    shape = tuple(-(-d // block) if a == axis else d for a, d in enumerate(x.shape))
    check("QuantizeLinear", {"x": x, "s": scales(shape), "z": ints("int8", shape)}, axis=axis, block_size=block)
    check("DequantizeLinear", {"x": ints("uint8", x.shape), "s": scales(shape), "z": ints("uint8", shape)},
          axis=axis, block_size=block)


def test_dequantize_int32_and_constant_values() -> None:
    check("DequantizeLinear", {"x": ints("int32", (4, 5), -10**6, 10**6), "s": np.array(0.001, np.float32)})
    check("DequantizeLinear", {"x": ints("uint8", (4, 5)), "s": np.array(0.2, np.float32),
                               "z": np.array(128, np.uint8)}, constants=("x",))


@pytest.mark.parametrize("values", [(-3.0, 5.0), (1.0, 9.0), (-8.0, -0.5), (0.0, 0.0)])
def test_dynamic_quantize(values: tuple[float, float]) -> None:
    x = RNG.uniform(*values, (6, 7)).astype(np.float32)
    check("DynamicQuantizeLinear", {"x": x}, n_out=3)


@pytest.mark.parametrize("types", [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8"), ("int8", "uint8")])
def test_matmul_integer(types: tuple[str, str]) -> None:
    a_type, b_type = types
    a, b = ints(a_type, (5, 17)), ints(b_type, (17, 6))
    exact = a_type != b_type
    check("MatMulInteger", {"a": a, "b": b}, opset=10, exact_products=exact)
    check("MatMulInteger", {"a": a, "b": b, "za": ints(a_type, ()), "zb": ints(b_type, ())}, opset=10,
          exact_products=exact)
    check("MatMulInteger", {"a": a, "b": b, "za": ints(a_type, ()), "zb": ints(b_type, (6,))}, opset=10,
          exact_products=exact)


def test_matmul_integer_batches() -> None:
    check("MatMulInteger", {"a": ints("uint8", (2, 3, 4, 5)), "b": ints("uint8", (5, 6)),
                            "za": np.array(7, np.uint8)}, opset=10)
    check("MatMulInteger", {"a": ints("uint8", (3, 4, 5)), "b": ints("int8", (3, 5, 2))}, opset=10,
          exact_products=True)


@pytest.mark.parametrize("types", [("uint8", "int8"), ("int8", "uint8")])
def test_matmul_integer_wraps_in_int32(types: tuple[str, str]) -> None:
    """Sums past 2^31 wrap in int32, as onnx's reference implementation does (onnxruntime does too where its
    products are exact)."""
    a_type, b_type = types
    a, b = np.full((2, 70000), np.iinfo(a_type).max, a_type), np.full((70000, 3), np.iinfo(b_type).max, b_type)
    b[::3, 1] = np.iinfo(b_type).min
    check("MatMulInteger", {"a": a, "b": b}, opset=10, exact_products=True)


@pytest.mark.parametrize("b_type", ["uint8", "int8"])
def test_qlinear_matmul(b_type: str) -> None:
    a, b = ints("uint8", (2, 4, 9)), ints(b_type, (9, 5))
    for b_scale, b_zero in ((scales(()), ints(b_type, ())), (scales((5,)), ints(b_type, (5,)))):
        check("QLinearMatMul", {"a": a, "sa": scales(()), "za": ints("uint8", ()), "b": b, "sb": b_scale,
                                "zb": b_zero, "sy": np.array(0.7, np.float32), "zy": np.array(100, np.uint8)},
              exact_products=b_type == "int8")


CONV_CASES = [
    {},
    {"pads": [1, 2, 0, 1], "strides": [2, 1]},
    {"dilations": [2, 1], "pads": [1, 1, 1, 1]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
]


@pytest.mark.parametrize("attributes", CONV_CASES)
@pytest.mark.parametrize("types", [("uint8", "uint8"), ("uint8", "int8")])
def test_conv_integer(attributes: dict, types: tuple[str, str]) -> None:
    x_type, w_type = types
    x, w = ints(x_type, (2, 3, 7, 6)), ints(w_type, (4, 3, 3, 2))
    exact = x_type != w_type
    check("ConvInteger", {"x": x, "w": w, "zx": ints(x_type, ()), "zw": ints(w_type, ())}, opset=10,
          exact_products=exact, **attributes)
    check("ConvInteger", {"x": x, "w": w}, opset=10, exact_products=exact, **attributes)


def test_conv_integer_groups_and_1d() -> None:
    check("ConvInteger", {"x": ints("uint8", (1, 4, 5, 5)), "w": ints("uint8", (6, 2, 2, 2)),
                          "zx": np.array(9, np.uint8)}, opset=10, group=2)
    check("ConvInteger", {"x": ints("uint8", (2, 3, 9)), "w": ints("uint8", (2, 3, 3)),
                          "zx": np.array(4, np.uint8)}, opset=10, pads=[1, 2], strides=[2])


@pytest.mark.parametrize("attributes", [{}, {"pads": [1, 1, 1, 1], "strides": [2, 1], "group": 2}])
@pytest.mark.parametrize("types", [("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")])
def test_qlinear_conv(attributes: dict, types: tuple[str, str]) -> None:
    x_type, w_type = types
    x, w = ints(x_type, (1, 4, 6, 5)), ints(w_type, (6, 4 // attributes.get("group", 1), 3, 3))
    y_zero = np.array(-5 if x_type == "int8" else 120, x_type)
    for w_scale in (scales(()), scales((6,))):
        check("QLinearConv", {"x": x, "sx": scales(()), "zx": ints(x_type, ()), "w": w, "sw": w_scale,
                              "zw": np.zeros((), w_type) if w_type == "int8" else ints(w_type, ()),
                              "sy": np.array(2.5, np.float32), "zy": y_zero,
                              "bias": ints("int32", (6,), -2000, 2000)}, constants=("w",),
              exact_products=x_type != w_type, **attributes)


@pytest.mark.parametrize("w_type", ["uint8", "int8"])
def test_qlinear_conv_per_channel_zero_points_and_1d(w_type: str) -> None:
    w_zero = ints(w_type, (4,))
    check("QLinearConv", {"x": ints("uint8", (2, 3, 5, 5)), "sx": scales(()), "zx": ints("uint8", ()),
                          "w": ints(w_type, (4, 3, 3, 3)), "sw": scales((4,)), "zw": w_zero,
                          "sy": np.array(1.5, np.float32), "zy": np.array(7, np.uint8)}, dilations=[1, 2],
          exact_products=w_type == "int8")
    check("QLinearConv", {"x": ints(w_type, (1, 3, 11)), "sx": scales(()), "zx": ints(w_type, ()),
                          "w": ints(w_type, (4, 3, 3)), "sw": scales((4,)), "zw": w_zero,
                          "sy": np.array(0.8, np.float32), "zy": np.array(2, w_type)}, pads=[2, 1], strides=[2])


def quantize_round_trip(dtype: str, zero: int, extra_reader: bool) -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear (one scale and zero point) -> y; with `extra_reader`, the quantized
    tensor is a model output too."""
    scale = numpy_helper.from_array(np.array(0.037, np.float32), "scale")
    zero_point = numpy_helper.from_array(np.array(zero, dtype), "zero")
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)]
    if extra_reader:
        outputs.append(helper.make_tensor_value_info("q", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 257])],
                              outputs, [scale, zero_point])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("dtype", "zero"), [("uint8", 131), ("int8", -3)])
@pytest.mark.parametrize("extra_reader", [False, True], ids=["one pass", "quantized output kept"])
def test_quantize_then_dequantize_in_one_pass(dtype: str, zero: int, extra_reader: bool) -> None:
    """A QDQ model's pair around an activation runs as one Quantize op of mode 3 (float32 to float32), exactly as the
    two ops, ties, saturation and NaN included; kept as two where something else reads the quantized tensor."""
    from edgepack.compiler.lower import lower_to_plan

    model = quantize_round_trip(dtype, zero, extra_reader)
    modes = [op.params[0] for op in lower_to_plan(model, {"x": [3, 257]}).ops]
    assert modes == ([0, 1] if extra_reader else [3])
    x = (RNG.standard_normal((3, 257)) * 6).astype(np.float32)
    x[0, :9] = [np.nan, np.inf, -np.inf, 0.5 * 0.037, 1.5 * 0.037, -2.5 * 0.037, 1e9, -1e9, -0.0]
    expected = run_onnxruntime(model, {"x": x})
    actual = PROVIDERS["cpu"].compile(model, {}).run({"x": x})
    np.testing.assert_array_equal(actual["y"], expected["y"])
    if extra_reader:
        np.testing.assert_array_equal(actual["q"], expected["q"])
