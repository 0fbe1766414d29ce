"""RNN, GRU and LSTM on the `cpu` provider against onnxruntime, on single-node models: every direction, both layouts,
initial states, biases, sequence_lens (a constant or a model input), clip, GRU's linear_before_reset, LSTM's
peepholes and input_forget, and activations with and without alpha and beta; within 1e-4. Weights reordered at plan
time (from 4 steps) also on the wasm and neon cores."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

RNG = np.random.default_rng(5)
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
SEQ, BATCH, INPUT, HIDDEN = 5, 3, 11, 9
TOLERANCE = 1e-4


def recurrent_model(op: str, with_bias: bool = True, initial: bool = True, lengths: str = "", peepholes: bool = False,
                    outputs: tuple[str, ...] = (), seq: int = SEQ,
                    **attributes: Any) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One recurrent node (layout 0); X, initial states and (with lengths="input") sequence_lens are model inputs,
    the rest initializers. Returns the model and its feeds."""
    dirs = 2 if attributes.get("direction") == "bidirectional" else 1
    gates = GATES[op]
    x = RNG.standard_normal((seq, BATCH, INPUT)).astype(np.float32)
    state = (dirs, BATCH, HIDDEN)
    weights = {"W": RNG.uniform(-0.4, 0.4, (dirs, gates * HIDDEN, INPUT)),
               "R": RNG.uniform(-0.4, 0.4, (dirs, gates * HIDDEN, HIDDEN))}
    if with_bias:
        weights["B"] = RNG.uniform(-0.3, 0.3, (dirs, 2 * gates * HIDDEN))
    if peepholes:
        weights["P"] = RNG.uniform(-0.5, 0.5, (dirs, 3 * HIDDEN))
    feeds = {"X": x}
    if initial:
        feeds["initial_h"] = RNG.standard_normal(state).astype(np.float32)
        if op == "LSTM":
            feeds["initial_c"] = RNG.standard_normal(state).astype(np.float32)
    row_lengths = np.array([seq, min(2, seq), min(4, seq)], np.int32)
    if lengths == "with zero":
        lengths, row_lengths[1] = "input", 0
    if lengths == "input":
        feeds["sequence_lens"] = row_lengths
    initializers = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    if lengths == "constant":
        initializers.append(numpy_helper.from_array(row_lengths, "sequence_lens"))
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"][:8 if op == "LSTM" else 6]
    present = set(feeds) | {t.name for t in initializers}
    inputs = [n if n in present else "" for n in names]
    while inputs and not inputs[-1]:
        inputs.pop()
    outputs = outputs or (("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h"))
    node = helper.make_node(op, inputs, list(outputs), hidden_size=HIDDEN, **attributes)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()],
        [helper.make_value_info(name, onnx.TypeProto()) for name in outputs if name], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    return onnx.shape_inference.infer_shapes(model, strict_mode=True), feeds


def batchwise(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The model with layout 1 (batch first) and its feeds, swapped from a layout-0 model."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    model.graph.node[0].attribute.append(helper.make_attribute("layout", 1))
    del model.graph.value_info[:]
    feeds = {k: v if k == "sequence_lens" else np.ascontiguousarray(v.swapaxes(0, 1)) for k, v in feeds.items()}
    del model.graph.input[:]
    model.graph.input.extend(helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                             for k, v in feeds.items())
    for output in model.graph.output:
        output.ClearField("type")
    return onnx.shape_inference.infer_shapes(model, strict_mode=True), feeds


def batchwise_outputs(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Layout-0 outputs in layout 1: Y [batch, seq, dirs, hidden], states [batch, dirs, hidden]."""
    return {k: v.transpose(2, 0, 1, 3) if k == "Y" else v.swapaxes(0, 1) for k, v in outputs.items()}


def check(op: str, layout: int = 0, **options: Any) -> None:
    """Compares with onnxruntime, which runs layout 0 only: layout 1 runs ours on the swapped model."""
    model, feeds = recurrent_model(op, **options)
    expected = run_onnxruntime(model, feeds)
    if layout:
        model, feeds = batchwise(model, feeds)
        expected = batchwise_outputs(expected)
    ours = PROVIDERS["cpu"].compile(model, {}).run(feeds)
    assert set(ours) == set(expected)
    for name, value in expected.items():
        assert ours[name].shape == value.shape, name
        np.testing.assert_allclose(ours[name], value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)


DIRECTIONS = ["forward", "reverse", "bidirectional"]


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_directions_and_layouts(op: str, direction: str, layout: int) -> None:
    check(op, direction=direction, layout=layout)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_no_bias_no_initial_state_and_only_y_h(op: str) -> None:
    check(op, with_bias=False, initial=False, outputs=("", "Y_h"))


@pytest.mark.parametrize("lengths", ["constant", "input", "with zero"])
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_lens(op: str, direction: str, lengths: str) -> None:
    check(op, direction=direction, lengths=lengths)


@pytest.mark.parametrize("seq", [1, 3, 4, 33, 70])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_sequence_lengths_around_the_kernels_paths(op: str, seq: int) -> None:
    """Below 4 steps the kernel takes dot products; from 4 it runs the input products as packed products over
    blocks of 32 steps (a block cut short by sequence_lens, the reverse direction's blocks from the end) and R h
    through R^T."""
    check(op, seq=seq, direction="bidirectional", lengths="input")
    check(op, seq=seq, direction="reverse", layout=1, **({"linear_before_reset": 1} if op == "GRU" else {}))


@pytest.mark.parametrize("length", [-1, SEQ + 1])
def test_sequence_lens_outside_the_sequence_is_an_error(length: int) -> None:
    model, feeds = recurrent_model("GRU", lengths="input")
    feeds["sequence_lens"][0] = length
    with pytest.raises(EdgepackError, match="sequence_lens outside"):
        PROVIDERS["cpu"].compile(model, {}).run(feeds)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(linear_before_reset: int, direction: str) -> None:
    check("GRU", direction=direction, linear_before_reset=linear_before_reset)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_clip(op: str) -> None:
    check(op, direction="bidirectional", clip=0.7)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_peepholes_and_input_forget(direction: str) -> None:
    check("LSTM", direction=direction, peepholes=True)
    check("LSTM", direction=direction, input_forget=1)
    check("LSTM", direction=direction, peepholes=True, input_forget=1, layout=1, clip=2.0)


ACTIVATION_CASES = [
    ("RNN", {"activations": ["Relu"]}),
    ("RNN", {"activations": ["Sigmoid", "Softsign"], "direction": "bidirectional"}),
    ("RNN", {"activations": ["LeakyRelu"], "activation_alpha": [0.2]}),
    ("RNN", {"activations": ["Affine", "ScaledTanh"], "activation_alpha": [0.5, 1.5], "activation_beta": [0.1, 0.7],
             "direction": "bidirectional"}),
    ("GRU", {"activations": ["HardSigmoid", "Softplus"], "activation_alpha": [0.3], "activation_beta": [0.4]}),
    ("GRU", {"activations": ["Sigmoid", "Elu", "Sigmoid", "ThresholdedRelu"], "activation_alpha": [0.8, 0.1],
             "direction": "bidirectional"}),
    ("LSTM", {"activations": ["HardSigmoid", "Tanh", "Relu"], "activation_alpha": [0.25], "activation_beta": [0.5]}),
    ("LSTM", {"activations": ["Sigmoid", "Softsign", "Tanh", "Sigmoid", "Tanh", "Softsign"],
              "direction": "bidirectional"}),
]


@pytest.mark.parametrize(("op", "attributes"), ACTIVATION_CASES)
def test_activations(op: str, attributes: dict[str, Any]) -> None:
    check(op, **attributes)


@pytest.mark.parametrize(("seq", "reordered"), [(3, False), (4, True)])
@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_sequences_from_four_steps_take_their_weights_reordered(op: str, seq: int, reordered: bool) -> None:
    """From 4 steps the plan holds W in the micro-kernel's panels per direction and R transposed, and says so in its
    last params word; shorter sequences keep ONNX's layouts."""
    model, feeds = recurrent_model(op, seq=seq, direction="bidirectional")
    plan = lower_to_plan(model, {k: v.shape for k, v in feeds.items()})
    recurrent, = [o for o in plan.ops if o.kind in ("LSTM", "Recurrent")]
    w, r = (plan.tensors[i] for i in recurrent.inputs[1:3])
    gates = GATES[op] * HIDDEN
    if reordered:
        assert recurrent.params[-1] == 1
        assert w.shape == (2, -(-gates // 32), INPUT, 32) and r.shape == (2, HIDDEN, gates)
    else:
        assert w.shape == (2, gates, INPUT) and r.shape == (2, gates, HIDDEN)


@pytest.mark.parametrize("provider", ["wasm", "neon"])
@pytest.mark.parametrize("op", ["GRU", "LSTM"])
def test_reordered_weights_on_builds_with_narrower_panels(provider: str, op: str) -> None:
    """The wasm and NEON cores read W's 32-column panels as several of their own, and R^T in their vectors."""
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    model, feeds = recurrent_model(op, seq=6, direction="bidirectional")
    expected = run_onnxruntime(model, feeds)
    ours = PROVIDERS[provider].compile(model, {}).run(feeds)
    for name, value in expected.items():
        np.testing.assert_allclose(ours[name], value, rtol=TOLERANCE, atol=TOLERANCE, err_msg=name)
