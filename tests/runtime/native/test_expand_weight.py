"""Quantized weights expanded once, when a session opens (the plan's open ExpandWeight ops): on the cpu, wasm and neon
cores the outputs are bit for bit those of the plan that dequantizes at each call, and within tolerance of
onnxruntime on the quantized model; runs after the first, with other inputs, keep the expanded weights; and the
loader refuses open sections that would break that."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.native import epk
from edgepack.runtime.native.binding import NativeSession
from edgepack.runtime.native.epk import ARENA, Op, Plan
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, relative_error
from .test_hostile_plans import BOUNDS, FORMAT, OP, TENSOR
from .test_quantized import WEIGHT_DTYPE, assert_refused_once_broken, per_call_plan, quantized, shapes


def plans(name: str, weights: str) -> tuple[Plan, Plan]:
    """The quantized model's plan expanding its weights at open, and the one dequantizing them at each call."""
    return lower_to_plan(quantized(name, weights), shapes(name)), per_call_plan(name, weights)


def onnxruntime_options() -> ort.SessionOptions:
    """onnxruntime as a generic bundle asks for it with quantized weights: folded into float32 at load."""
    options = ort.SessionOptions()
    options.add_session_config_entry("session.disable_quant_qdq", "1")
    return options


def run_plan(provider: str, plan: Plan, inputs: dict[str, np.ndarray], folder: Path) -> dict[str, np.ndarray]:
    path = folder / f"{provider}-{id(plan)}.epk"
    path.write_bytes(epk.write(plan))
    return PROVIDERS[provider].load(path, {}).run(inputs)


@pytest.mark.parametrize("weights", ["int8", "int4", "fp16"])
@pytest.mark.parametrize("name", ["tiny-cnn", "tiny-transformer", "ppocr-cls", "silero-vad-16k-sequence"])
def test_expanded_weights_are_the_open_ops_and_change_no_bit(name: str, weights: str) -> None:
    expanded, per_call = plans(name, weights)
    opened = expanded.ops[:expanded.open_ops]
    assert opened and all(op.kind == "ExpandWeight" for op in opened)
    assert all(op.kind != "ExpandWeight" for op in expanded.ops[expanded.open_ops:])
    assert WEIGHT_DTYPE[weights] in {expanded.tensors[op.inputs[0]].dtype for op in opened}
    assert not [op.kind for op in expanded.ops[expanded.open_ops:] for i in op.inputs
                if i is not None and expanded.tensors[i].dtype in WEIGHT_DTYPE.values()], "a weight read quantized"
    model = quantized(name, weights)
    reference = ort.InferenceSession(model.SerializeToString(), onnxruntime_options(),
                                     providers=["CPUExecutionProvider"])
    first, second = NativeSession(epk.write(expanded)), NativeSession(epk.write(per_call))
    for seed in (0, 1, 0):
        inputs = feeds(name, seed)
        ours, theirs = first.run(inputs), second.run(inputs)
        expected = dict(zip([o.name for o in model.graph.output], reference.run(None, inputs)))
        for key, value in ours.items():
            np.testing.assert_array_equal(value, theirs[key], err_msg=key)
            assert relative_error(expected[key], value) <= TOLERANCE, key


@pytest.mark.parametrize("provider, name, weights", [
    ("wasm", "tiny-cnn", "int8"), ("wasm", "tiny-transformer", "int4"), ("wasm", "tiny-cnn", "fp16"),
    ("neon", "tiny-transformer", "int8"), ("neon", "tiny-cnn", "int4"), ("neon", "tiny-transformer", "fp16")])
def test_expanded_weights_change_no_bit_emulated(provider: str, name: str, weights: str, tmp_path: Path) -> None:
    if reason := PROVIDERS[provider].missing():
        pytest.skip(reason)
    expanded, per_call = plans(name, weights)
    assert expanded.open_ops
    inputs = feeds(name, 1)
    ours, theirs = run_plan(provider, expanded, inputs, tmp_path), run_plan(provider, per_call, inputs, tmp_path)
    native = NativeSession(epk.write(expanded)).run(inputs)
    for key, value in ours.items():
        np.testing.assert_array_equal(value, theirs[key], err_msg=key)
        assert relative_error(native[key], value) <= TOLERANCE, key


def test_the_session_holds_the_expanded_weights_apart_from_every_other_buffer() -> None:
    expanded, per_call = plans("tiny-cnn", "int8")
    floats = sum(expanded.tensors[op.outputs[0]].nbytes for op in expanded.ops[:expanded.open_ops])
    assert expanded.arena_bytes >= per_call.arena_bytes + floats - 64 * expanded.open_ops
    spans = [(t.offset, t.offset + t.nbytes) for t in (expanded.tensors[op.outputs[0]]
                                                       for op in expanded.ops[:expanded.open_ops])]
    others = [(t.offset, t.offset + t.nbytes) for i, t in enumerate(expanded.tensors) if t.location == ARENA and
              i not in {op.outputs[0] for op in expanded.ops[:expanded.open_ops]}]
    assert not [1 for a, b in spans for c, d in others if a < d and c < b]


def first_reader(plan: Plan) -> Op:
    expanded = {op.outputs[0] for op in plan.ops[:plan.open_ops]}
    return next(op for op in plan.ops[plan.open_ops:] if expanded & set(op.inputs))


def open_count_past_the_ops(plan: Plan) -> None:
    plan.open_ops = len(plan.ops) + 1


def expansion_after_the_open_ops(plan: Plan) -> None:
    plan.open_ops -= 1


def other_op_at_open(plan: Plan) -> None:
    plan.open_ops += 1


def later_op_writes_an_expanded_weight(plan: Plan) -> None:
    reader = first_reader(plan)
    plan.ops.insert(plan.open_ops, Op("Copy", [reader.inputs[1]], [reader.inputs[1]]))


def expanded_weight_over_an_input(plan: Plan) -> None:
    plan.tensors[plan.ops[0].outputs[0]].offset = plan.tensors[plan.inputs[0]].offset


def expanded_weight_under_an_unread_input(plan: Plan) -> None:
    """An input no op reads is dead to the lifetime check, but the caller writes it before every run."""
    expanded = plan.tensors[plan.ops[0].outputs[0]]
    plan.tensors.append(epk.Tensor("unread", "float32", (4,), ARENA, offset=expanded.offset))
    plan.inputs.append(len(plan.tensors) - 1)


def expansion_of_an_arena_tensor(plan: Plan) -> None:
    plan.ops[0].inputs[0] = plan.inputs[0]


def expansion_of_a_float_weight(plan: Plan) -> None:
    reader = next(op for op in plan.ops[plan.open_ops:] if op.kind == "Conv" and op.inputs[2] is not None)
    plan.ops[0].inputs[0] = reader.inputs[2]


HOSTILE: dict[str, tuple[Callable[[Plan], None], int]] = {
    "more open ops than ops": (open_count_past_the_ops, FORMAT),
    "an ExpandWeight after the open ops": (expansion_after_the_open_ops, OP),
    "another op among the open ops": (other_op_at_open, OP),
    "a later op writes an expanded weight": (later_op_writes_an_expanded_weight, TENSOR),
    "an expanded weight over a model input": (expanded_weight_over_an_input, BOUNDS),
    "an expanded weight under an unread model input": (expanded_weight_under_an_unread_input, BOUNDS),
    "an expansion of an arena tensor": (expansion_of_an_arena_tensor, OP),
    "an expansion of a float32 weight": (expansion_of_a_float_weight, OP),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_broken_open_section_is_refused(case: str) -> None:
    assert_refused_once_broken(plans("tiny-cnn", "int8")[0], *HOSTILE[case])
