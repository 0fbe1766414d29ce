"""sample_feeds: seeded random inputs of the right dtype, range and shape for a model's input specs."""

from __future__ import annotations

import numpy as np
import pytest

from edgepack import EdgepackError, samples
from edgepack.runtime import Session, TensorSpec
from edgepack.sample_inputs import dims_of, parse_dims, sample_feeds

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
