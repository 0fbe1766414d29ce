"""Constants out of float16's range in a CoreML program computed in fp16: an attention mask of -3.4e38 (a BERT's)
and a 1e-10 epsilon before a Log stay finite, where fp16 rounding made NaN and -inf."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack.runtime import Session
from edgepack.runtime.providers import PROVIDERS
from edgepack.runtime.providers.coreml.fp16_range import FP16_MAX, clamp_to_fp16
from tests.oracle import run_onnxruntime

pytestmark = pytest.mark.skipif(PROVIDERS["coreml"].missing() is not None, reason=f"{PROVIDERS['coreml'].missing()}")


def masked_log_model() -> onnx.ModelProto:
    """scores + (1 - mask) * -3.4e38, softmax; and log(relu(x) + 1e-10)."""
    nodes = [helper.make_node("Sub", ["one", "mask"], ["inverted"]),
             helper.make_node("Mul", ["inverted", "lowest"], ["penalty"]),
             helper.make_node("Add", ["scores", "penalty"], ["masked"]),
             helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
             helper.make_node("Relu", ["scores"], ["positive"]),
             helper.make_node("Add", ["positive", "epsilon"], ["guarded"]),
             helper.make_node("Log", ["guarded"], ["logs"])]
    constants = [numpy_helper.from_array(np.array(v, np.float32), n)
                 for n, v in (("one", 1.0), ("lowest", np.finfo(np.float32).min), ("epsilon", 1e-10))]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8]) for n in ("scores", "mask")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8]) for n in ("probs", "logs")]
    graph = helper.make_graph(nodes, "g", inputs, outputs, constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_clamping_keeps_values_fp16_can_hold() -> None:
    values = np.array([-3.4e38, -70000.0, -1.5, 0.0, 1e-10, -1e-9, 3e-5, 65504.0, 1e6], np.float32)
    clamped = clamp_to_fp16(values)
    assert np.isfinite(clamped.astype(np.float16)).all() and (clamped.astype(np.float16)[[4, 5]] != 0).all()
    np.testing.assert_array_equal(clamped[[2, 3, 6, 7]], values[[2, 3, 6, 7]])
    assert clamped[0] == -FP16_MAX and clamped[-1] == FP16_MAX


def test_a_masked_softmax_and_a_guarded_log_stay_finite_in_fp16() -> None:
    model = masked_log_model()
    rng = np.random.default_rng(0)
    feeds = {"scores": rng.standard_normal((2, 8)).astype(np.float32),
             "mask": (rng.random((2, 8)) > 0.3).astype(np.float32)}
    actual = Session(model, providers=["coreml"], provider_options={"coreml": {"compute_precision": "fp16"}}).run(feeds)
    expected = run_onnxruntime(model, feeds)
    assert np.isfinite(actual["probs"]).all() and np.isfinite(actual["logs"]).all()
    np.testing.assert_allclose(actual["probs"], expected["probs"], atol=2e-3)
    positive = feeds["scores"] > 0.01  # where log's argument is not the epsilon, which fp16 cannot hold
    np.testing.assert_allclose(actual["logs"][positive], expected["logs"][positive], atol=1e-2)
