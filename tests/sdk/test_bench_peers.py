"""The peers a host bench runs beside a bundle (sdk/bench_peers.py): what a peer that cannot run the model says."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepack.bench_peers import load_openvino
from edgepack.runtime.errors import EdgepackError


def test_openvino_that_cannot_compile_names_its_reason_not_its_call_stack(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    model = tmp_path / "broken.onnx"
    model.write_bytes(b"not a model")
    with pytest.raises(EdgepackError) as raised:
        load_openvino(model)
    message = str(raised.value)
    assert "OpenVINO could not compile broken.onnx: Unable to read the model" in message
    assert "Exception from" not in message and "--compare openvino" in message
