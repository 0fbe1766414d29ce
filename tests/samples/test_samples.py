"""Sample models: real ones extracted from the published wheels, tiny ones generated, feeds that fit each."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from edgepack import samples
from edgepack.samples.tiny import tiny_transformer
from tests.oracle import run_onnxruntime


@pytest.mark.parametrize("name", samples.names())
def test_feeds_fit_the_model_and_it_runs(name: str) -> None:
    path = samples.path(name)
    model = onnx.load(path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    feeds = samples.feeds(name)
    assert sorted(feeds) == sorted(i.name for i in inputs)
    for info in inputs:
        dims = info.type.tensor_type.shape.dim
        assert feeds[info.name].ndim == len(dims)
        for dim, size in zip(dims, feeds[info.name].shape):
            assert dim.dim_value <= 0 or dim.dim_value == size, (info.name, dim, size)
    outputs = run_onnxruntime(model, feeds)
    assert all(v.size > 0 for v in outputs.values())


def test_real_models_come_from_the_wheels_cache() -> None:
    path = samples.path("ppocr-cls")
    assert path.is_file() and path.stat().st_size > 500_000
    assert "rapidocr-onnxruntime-1.4.4" in str(path)
    assert len(samples.names("real")) == 9 and len(samples.names("tiny")) == 3


def test_feeds_are_fixed_for_a_seed() -> None:
    first, second = samples.feeds("ppocr-det"), samples.feeds("ppocr-det")
    assert (first["x"] == second["x"]).all()
    assert not (samples.feeds("ppocr-det", seed=1)["x"] == first["x"]).all()


def test_tiny_transformer_scales_to_realistic_width() -> None:
    model = tiny_transformer(hidden=384, layers=6)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("LayerNormalization") == 12 and ops.count("Erf") == 6 and ops.count("Softmax") == 6
    onnx.checker.check_model(model, full_check=True)


def test_tiny_if_has_branches_with_nodes() -> None:
    model = onnx.load(samples.path("tiny-if"))
    branch = next(n for n in model.graph.node if n.op_type == "If")
    assert {a.name for a in branch.attribute} == {"then_branch", "else_branch"}
    assert all(len(a.g.node) >= 4 for a in branch.attribute)


def test_unknown_sample_is_a_user_error() -> None:
    from edgepack import EdgepackError

    with pytest.raises(EdgepackError, match="unknown sample model 'nope'"):
        samples.path("nope")


def test_samples_command_lists_cached_paths(cli, tmp_path) -> None:
    result = cli("samples", "tiny-cnn", "--cache-dir", tmp_path, "--json")
    assert result.code == 0
    assert (tmp_path / "tiny" / "tiny-cnn.onnx").is_file()
    assert str(tmp_path / "tiny" / "tiny-cnn.onnx") in result.out


def test_ppocr_det_sees_text_on_its_synthetic_page() -> None:
    """The catalog feeds ppocr-det a text page: its map marks text there, and stays near zero on noise."""
    page = run_onnxruntime(samples.path("ppocr-det"), samples.feeds("ppocr-det"))
    noise = {"x": np.random.default_rng(0).uniform(-1, 1, (1, 3, 640, 640)).astype(np.float32)}
    blank = run_onnxruntime(samples.path("ppocr-det"), noise)
    assert np.mean(next(iter(page.values())) > 0.3) > 0.001
    assert np.mean(next(iter(blank.values())) > 0.3) < 0.0001
