"""The `openvino` provider: partitions compiled by OpenVINO for its CPU device, from ONNX or from OpenVINO IR."""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..capability import Capability
from . import Options, Provider, register
from .openvino_ops import CLAIMS

DEVICE = "CPU"
PRECISIONS = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
"""Profile precision names to OpenVINO's `INFERENCE_PRECISION_HINT` values."""


@cache
def _core() -> Any:
    import openvino as ov

    return ov.Core()


def config(options: Options) -> dict[str, Any]:
    """OpenVINO compile properties from partition options: `inference_precision` (fp32 unless set: OpenVINO's own
    default is bf16 on CPUs with AMX or AVX-512 BF16) and `threads`."""
    properties: dict[str, Any] = {"INFERENCE_PRECISION_HINT": PRECISIONS[options.get("inference_precision", "fp32")]}
    if options.get("threads"):
        properties["INFERENCE_NUM_THREADS"] = int(options["threads"])
    return properties


class OpenVINOPartition:
    def __init__(self, model: Any, options: Options, output_names: list[str],
                 output_dtypes: dict[str, np.dtype] | None = None) -> None:
        self.compiled = _core().compile_model(model, DEVICE, config(options))
        self.request = self.compiled.create_infer_request()
        self.input_names = {name for port in self.compiled.inputs for name in port.get_names()}
        self.output_names = output_names
        self.output_dtypes = output_dtypes or {}

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # OpenVINO drops inputs the graph does not read; feeding them is an error there.
        results = self.request.infer({name: value for name, value in feeds.items() if name in self.input_names})
        outputs = {}
        for name, port in zip(self.output_names, self.compiled.outputs):
            value = results[port]
            dtype = self.output_dtypes.get(name)
            outputs[name] = value.astype(dtype, copy=False) if dtype is not None else value
        return outputs


def _declared_dtypes(model: onnx.ModelProto) -> dict[str, np.dtype]:
    """The element types the ONNX graph declares for its outputs: OpenVINO computes f64 in f32, for example."""
    return {o.name: onnx.helper.tensor_dtype_to_np_dtype(o.type.tensor_type.elem_type) for o in model.graph.output
            if o.type.HasField("tensor_type") and o.type.tensor_type.elem_type}


def compile_partition(model: onnx.ModelProto, options: Options) -> OpenVINOPartition:
    return OpenVINOPartition(_read_onnx(model), options, [o.name for o in model.graph.output],
                             _declared_dtypes(model))


def _read_onnx(model: onnx.ModelProto) -> Any:
    """The ONNX model as an OpenVINO model whose results carry exactly the ONNX output names (OpenVINO may list
    several names per tensor)."""
    ov_model = _core().read_model(model.SerializeToString())
    for port, output in zip(ov_model.outputs, model.graph.output):
        port.get_tensor().set_names({output.name})
    return ov_model


def load_partition(path: Path, options: Options) -> OpenVINOPartition:
    ov_model = _core().read_model(str(path))
    return OpenVINOPartition(ov_model, options, [port.get_any_name() for port in ov_model.outputs])


def to_ir(model: onnx.ModelProto, xml_path: Path) -> None:
    """Save an ONNX partition as OpenVINO IR (`.xml` + `.bin`). Weights keep their stored precision: the quantize
    stage chose it (fp16 initializers behind a Cast stay fp16 in the IR)."""
    import openvino as ov

    ov.save_model(_with_stable_names(_read_onnx(model)), str(xml_path), compress_to_fp16=False)


def _with_stable_names(model: Any) -> Any:
    """The OpenVINO model with the names OpenVINO made up (`<Type>_<counter>`, the counter global to the process)
    replaced by names from each op's place in the graph, so that the IR is the same bytes in every build."""
    for index, op in enumerate(model.get_ordered_ops()):
        if re.fullmatch(rf"{re.escape(op.get_type_name())}_\d+", op.get_friendly_name()):
            op.set_friendly_name(f"edgepack_{index}_{op.get_type_name()}")
    return model


def _missing() -> str | None:
    if importlib.util.find_spec("openvino") is None:
        return "the openvino package is not installed (pip install 'edgepack[openvino]')"
    return None


PROVIDER = register(Provider("openvino", "OpenVINO on the Intel CPU device (IR or ONNX partitions)",
                             Capability(CLAIMS), compile_partition, load_partition, _missing,
                             full_precision={"inference_precision": "fp32"}, thread_option="threads"))
