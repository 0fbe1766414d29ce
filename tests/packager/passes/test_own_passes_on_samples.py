"""edgepack's own slim passes after onnxscript and onnxslim, on every sample model, run directly (no
skip-on-failure as in the pipeline, so a pass that raises fails here)."""

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from edgepack import samples
from edgepack.packager.graphs import count_nodes
from edgepack.packager.passes import PASSES
from edgepack.packager.slim import OWN_PIPELINE
from tests.oracle import run_onnxruntime


@pytest.mark.parametrize("name", samples.names())
def test_own_passes_after_the_libraries_keep_outputs_and_never_add_nodes(name: str) -> None:
    source = onnx.load(samples.path(name))
    model = PASSES["onnxslim"].apply(PASSES["onnxscript-optimizer"].apply(ir.from_proto(source)))
    after_libraries = count_nodes(model)
    before = None
    while before != count_nodes(model):
        before = count_nodes(model)
        for pass_name in OWN_PIPELINE:
            model = PASSES[pass_name].apply(model)
    slimmed = ir.to_proto(model)
    onnx.checker.check_model(slimmed, full_check=True)
    assert count_nodes(slimmed) <= after_libraries
    assert [i.name for i in slimmed.graph.input] == [i.name for i in source.graph.input]
    feeds = samples.feeds(name)
    expected, actual = run_onnxruntime(source, feeds), run_onnxruntime(slimmed, feeds)
    assert list(actual) == list(expected)
    for output, want in expected.items():  # fp32 reassociation from weight folding: see test_build's tolerance
        np.testing.assert_allclose(actual[output], want, rtol=1e-4, atol=1e-5, err_msg=output)
