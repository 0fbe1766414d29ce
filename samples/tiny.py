"""Tiny models generated with onnx.helper: a CNN, a transformer encoder block, and a model with an If."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .atomic import write_bytes_atomically

OPSET = 17


def _weights(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 0.1) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _const(name: str, array: np.ndarray) -> onnx.NodeProto:
    """A Constant node, the way exporters (paddle2onnx, torch) often store weights."""
    return helper.make_node("Constant", [], [name], name=f"{name}_const", value=numpy_helper.from_array(array, name))


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="edgepack-samples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def tiny_cnn(seed: int = 0) -> onnx.ModelProto:
    """Conv+BatchNorm+Relu, Conv+Mul, pooling, Identity/Dropout no-ops, MatMul+Add head, Softmax."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(_weights(rng, (8, 3, 3, 3)), "conv1.w"),
        numpy_helper.from_array(_weights(rng, (8,)), "conv1.b"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.scale"),
        numpy_helper.from_array(_weights(rng, (8,)), "bn.bias"),
        numpy_helper.from_array(_weights(rng, (8,)), "bn.mean"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.var"),
        numpy_helper.from_array(_weights(rng, (10, 16)), "fc.w_t"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"], name="bn1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        _const("conv2.w", _weights(rng, (16, 8, 3, 3))),
        helper.make_node("Conv", ["p1", "conv2.w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        _const("conv2.scale", rng.uniform(0.5, 1.5, (1, 16, 1, 1)).astype(np.float32)),
        helper.make_node("Mul", ["c2", "conv2.scale"], ["m2"], name="conv2_scale"),
        helper.make_node("Identity", ["m2"], ["i2"], name="identity"),
        helper.make_node("Dropout", ["i2"], ["d2"], name="dropout"),
        helper.make_node("Relu", ["d2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Transpose", ["fc.w_t"], ["fc.w"], name="fc_w_transpose", perm=[1, 0]),
        _const("fc.w_unused", _weights(rng, (16, 10))),  # dead: nothing reads it
        helper.make_node("MatMul", ["f", "fc.w"], ["mm"], name="fc_matmul"),
        _const("fc.b", _weights(rng, (10,))),
        helper.make_node("Add", ["mm", "fc.b"], ["logits"], name="fc_add"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    return _model(graph)


def tiny_transformer(hidden: int = 64, layers: int = 1, heads: int = 4, seq: int | str = "seq",
                     seed: int = 0) -> onnx.ModelProto:
    """A transformer encoder: multi-head attention, LayerNormalization, Erf-based GELU feed-forward."""
    rng = np.random.default_rng(seed)
    head_dim = hidden // heads
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = [
        numpy_helper.from_array(np.array([0, 0, heads, head_dim], np.int64), "heads_shape"),
        numpy_helper.from_array(np.array([0, 0, hidden], np.int64), "merge_shape"),
        numpy_helper.from_array(np.array(np.sqrt(head_dim), np.float32), "attn_scale"),
        numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]

    def linear(prefix: str, x: str, fan_in: int, fan_out: int) -> str:
        inits.append(numpy_helper.from_array(_weights(rng, (fan_in, fan_out), 1 / np.sqrt(fan_in)), f"{prefix}.w"))
        inits.append(numpy_helper.from_array(_weights(rng, (fan_out,)), f"{prefix}.b"))
        nodes.append(helper.make_node("MatMul", [x, f"{prefix}.w"], [f"{prefix}.mm"], name=f"{prefix}_matmul"))
        nodes.append(helper.make_node("Add", [f"{prefix}.mm", f"{prefix}.b"], [f"{prefix}.out"], name=f"{prefix}_add"))
        return f"{prefix}.out"

    def layer_norm(prefix: str, x: str) -> str:
        inits.append(numpy_helper.from_array(rng.uniform(0.8, 1.2, hidden).astype(np.float32), f"{prefix}.gamma"))
        inits.append(numpy_helper.from_array(_weights(rng, (hidden,)), f"{prefix}.beta"))
        nodes.append(helper.make_node("LayerNormalization", [x, f"{prefix}.gamma", f"{prefix}.beta"], [f"{prefix}.out"],
                                      name=f"{prefix}_layernorm", axis=-1, epsilon=1e-5))
        return f"{prefix}.out"

    def node(op: str, inputs: list[str], output: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output.replace(".", "_"), **attrs))
        return output

    x = "tokens"
    for i in range(layers):
        p = f"l{i}"
        split = []
        for part in ("q", "k", "v"):
            proj = linear(f"{p}.{part}", x, hidden, hidden)
            shaped = node("Reshape", [proj, "heads_shape"], f"{p}.{part}.heads")
            split.append(node("Transpose", [shaped], f"{p}.{part}.t", perm=[0, 2, 1, 3]))
        q, k, v = split
        kt = node("Transpose", [k], f"{p}.kt", perm=[0, 1, 3, 2])
        scores = node("MatMul", [q, kt], f"{p}.scores")
        scaled = node("Div", [scores, "attn_scale"], f"{p}.scaled")
        attn = node("Softmax", [scaled], f"{p}.attn", axis=-1)
        ctx = node("MatMul", [attn, v], f"{p}.ctx")
        ctx_t = node("Transpose", [ctx], f"{p}.ctx.t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [ctx_t, "merge_shape"], f"{p}.merged")
        out = linear(f"{p}.o", merged, hidden, hidden)
        res1 = node("Add", [x, out], f"{p}.res1")
        ln1 = layer_norm(f"{p}.ln1", res1)
        up = linear(f"{p}.ff1", ln1, hidden, 4 * hidden)
        scaled_up = node("Div", [up, "sqrt2"], f"{p}.gelu.div")
        erf = node("Erf", [scaled_up], f"{p}.gelu.erf")
        erf1 = node("Add", [erf, "one"], f"{p}.gelu.add")
        gated = node("Mul", [up, erf1], f"{p}.gelu.mul")
        gelu = node("Mul", [gated, "half"], f"{p}.gelu.out")
        down = linear(f"{p}.ff2", gelu, 4 * hidden, hidden)
        res2 = node("Add", [ln1, down], f"{p}.res2")
        x = layer_norm(f"{p}.ln2", res2)
    nodes.append(helper.make_node("Identity", [x], ["encoded"], name="output_identity"))
    graph = helper.make_graph(
        nodes, "tiny_transformer",
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, ["batch", seq, hidden])],
        [helper.make_tensor_value_info("encoded", TensorProto.FLOAT, ["batch", seq, hidden])],
        inits,
    )
    return _model(graph)


def tiny_if(seed: int = 0) -> onnx.ModelProto:
    """An If whose branches hold Constant nodes, an Identity and outer-scope references."""
    rng = np.random.default_rng(seed)
    scale = _weights(rng, (8,), 1.0)
    then_branch = helper.make_graph(
        [
            _const("then_scale", scale),
            helper.make_node("Mul", ["x", "then_scale"], ["then_mul"], name="then_mul"),
            helper.make_node("Identity", ["then_mul"], ["then_id"], name="then_identity"),
            helper.make_node("Relu", ["then_id"], ["then_out"], name="then_relu"),
        ],
        "then_branch", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)],
    )
    else_branch = helper.make_graph(
        [
            _const("else_scale", scale),
            helper.make_node("Mul", ["x", "else_scale"], ["else_mul"], name="else_mul"),
            helper.make_node("Mul", ["x", "else_scale"], ["else_mul_dup"], name="else_mul_dup"),
            helper.make_node("Add", ["else_mul", "else_mul_dup"], ["else_sum"], name="else_add"),
            helper.make_node("Tanh", ["else_sum"], ["else_out"], name="else_tanh"),
        ],
        "else_branch", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)],
    )
    graph = helper.make_graph(
        [
            helper.make_node("If", ["use_relu"], ["branch_out"], name="branch",
                             then_branch=then_branch, else_branch=else_branch),
            helper.make_node("Sigmoid", ["branch_out"], ["y"], name="sigmoid"),
        ],
        "tiny_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8]),
         helper.make_tensor_value_info("use_relu", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
    )
    return _model(graph)


TINY: dict[str, Callable[[], onnx.ModelProto]] = {
    "tiny-cnn": tiny_cnn,
    "tiny-transformer": tiny_transformer,
    "tiny-if": tiny_if,
}


def write_tiny(name: str, folder: Path) -> Path:
    """Generate tiny model `name` into `folder` (regenerated each call: it is cheap and deterministic)."""
    target = folder / f"{name}.onnx"
    data = TINY[name]().SerializeToString()
    if not target.is_file() or target.read_bytes() != data:
        write_bytes_atomically(target, data)
    return target
