"""sample_feeds: seeded random inputs of the right dtype, range and shape for a model's input specs; integer_limits:
the ranges a model's integer inputs must keep (table sizes, masks)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from edgepack import EdgepackError, samples
from edgepack.runtime import Session, TensorSpec
from edgepack.sample_inputs import dims_of, integer_limits, parse_dims, sample_feeds
from edgepack.verify import run_oracle
from tests.oracle import run_onnxruntime

SPECS = [
    TensorSpec("x", "float32", ["batch", 3, "h", "w"]),
    TensorSpec("half", "float16", [4, 4]),
    TensorSpec("ids", "int64", ["batch", "seq"]),
    TensorSpec("small", "uint8", [100]),
    TensorSpec("mask", "bool", ["batch", "seq"]),
    TensorSpec("unknown", "float64", [None, None]),
    TensorSpec("scalar", "int32", []),
]


def test_dtypes_ranges_and_default_sizes() -> None:
    feeds = sample_feeds(SPECS)
    assert list(feeds) == [s.name for s in SPECS]
    assert {n: a.dtype.name for n, a in feeds.items()} == {s.name: s.dtype for s in SPECS}
    assert feeds["x"].shape == (1, 3, 64, 64)  # symbolic: 1 on axis 0, 64 elsewhere
    assert feeds["unknown"].shape == (1, 64)  # unknown dims follow the same rule
    assert feeds["scalar"].shape == ()
    for name in ("x", "half", "unknown"):
        assert -1 <= feeds[name].min() < 0 < feeds[name].max() <= 1, name
    for name in ("ids", "small"):
        assert set(np.unique(feeds[name])) <= set(range(10)), name
    assert len(np.unique(feeds["ids"])) > 5
    assert set(np.unique(feeds["mask"])) == {False, True}


def test_a_symbolic_name_gets_one_size_everywhere() -> None:
    feeds = sample_feeds(SPECS, dims={"seq": 7})
    assert feeds["ids"].shape == feeds["mask"].shape == (1, 7)
    shared = sample_feeds([TensorSpec("img", "float32", [1, 3, "?", "?"])])
    assert shared["img"].shape == (1, 3, 64, 64)
    tied = sample_feeds([TensorSpec("a", "float32", [2, "n"]), TensorSpec("b", "float32", ["n", 5])])
    assert tied["a"].shape[1] == tied["b"].shape[0] == 64  # first seen on axis 1: 64, also on axis 0 of b


def test_dims_override_every_symbolic_dim() -> None:
    feeds = sample_feeds(SPECS, dims={"batch": 2, "h": 48, "w": 192, "seq": 16})
    assert feeds["x"].shape == (2, 3, 48, 192)
    assert feeds["ids"].shape == (2, 16)
    assert feeds["half"].shape == (4, 4)  # fixed dims are kept


def test_same_seed_same_arrays_other_seed_other_arrays() -> None:
    first, again, other = sample_feeds(SPECS, seed=3), sample_feeds(SPECS, seed=3), sample_feeds(SPECS, seed=4)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["x"], other["x"])


def test_fits_a_real_model() -> None:
    session = Session(samples.path("ppocr-cls"))
    feeds = sample_feeds(session.inputs, dims={"?": 48})
    assert feeds["x"].shape == (1, 3, 48, 48)  # paddle2onnx named both H and W "?"
    (probs,) = session.run(feeds).values()
    assert probs.shape == (1, 2)
    assert np.isclose(probs.sum(), 1, atol=1e-5)


@pytest.mark.parametrize(("spec", "dims", "fragment"), [
    (TensorSpec("s", "str", [2]), None, "input 's' is str, for which no random input"),
    (TensorSpec("b", "bfloat16", [2]), None, "input 'b' is bfloat16"),
    (TensorSpec("r", "float32", None), None, "input 'r' has no known rank"),
    (TensorSpec("x", "float32", ["n"]), {"n": 0}, "dim 'n' must be a positive integer"),
])
def test_what_cannot_be_generated_is_a_user_error(spec: TensorSpec, dims: dict | None, fragment: str) -> None:
    with pytest.raises(EdgepackError, match=fragment):
        sample_feeds([spec], dims=dims)


def test_dims_of_given_arrays() -> None:
    given = {"ids": np.zeros((3, 11), np.int64)}
    assert dims_of(SPECS, given) == {"batch": 3, "seq": 11}
    assert sample_feeds([SPECS[4]], dims=dims_of(SPECS, given))["mask"].shape == (3, 11)


def test_parse_dims() -> None:
    assert parse_dims(["batch=4", " seq =16"]) == {"batch": 4, "seq": 16}
    for bad in ("batch", "=4", "batch=0", "batch=x"):
        with pytest.raises(EdgepackError, match="bad --dim"):
            parse_dims([bad])


def embedding_model() -> onnx.ModelProto:
    """Token ids index a 30-row vocabulary, token type ids (through a Cast) a 2-row table; a mask multiplies."""
    nodes = [helper.make_node("Gather", ["vocabulary", "input_ids"], ["words"]),
             helper.make_node("Cast", ["token_type_ids"], ["types32"], to=TensorProto.INT32),
             helper.make_node("Gather", ["token_types", "types32"], ["types"]),
             helper.make_node("Add", ["words", "types"], ["summed"]),
             helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mask", "last"], ["mask3"]),
             helper.make_node("Mul", ["summed", "mask3"], ["y"])]
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        nodes, "embeddings",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
         for name in ("input_ids", "token_type_ids", "attention_mask")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal((30, 4)).astype(np.float32), "vocabulary"),
         numpy_helper.from_array(rng.standard_normal((2, 4)).astype(np.float32), "token_types"),
         numpy_helper.from_array(np.array([-1], np.int64), "last")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_integer_inputs_stay_inside_the_tables_they_index_and_masks_are_0_or_1() -> None:
    model = embedding_model()
    limits = integer_limits(model)
    assert limits == {"input_ids": 30, "token_type_ids": 2, "attention_mask": 2}
    specs = [TensorSpec(v.name, "int64", ["batch", "seq"]) for v in model.graph.input]
    for seed in range(3):
        feeds = sample_feeds(specs, seed=seed, dims={"seq": 50}, limits=limits)
        assert set(np.unique(feeds["token_type_ids"])) == {0, 1}
        assert set(np.unique(feeds["attention_mask"])) == {0, 1}
        assert feeds["input_ids"].max() < 10  # the default range, inside the vocabulary
        np.testing.assert_allclose(Session(model, providers=["reference"]).run(feeds)["y"],
                                   run_onnxruntime(model, feeds)["y"], rtol=1e-6)


def test_verify_generates_inputs_the_model_accepts() -> None:
    """Before the limits, generated token type ids of up to 9 made the source model fail on its own inputs."""
    oracle = run_oracle(embedding_model())
    assert len(oracle.expected) == len(oracle.samples) and "token_type_ids in [0, 2)" in oracle.origin
