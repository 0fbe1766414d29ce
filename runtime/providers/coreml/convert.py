"""An ONNX partition as a CoreML ML Program: each node through its registered converter into coremltools' MIL,
then `mlprogram` with the profile's deployment target, compute precision and weight compression."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from edgepack.runtime.errors import EdgepackError

from ...capability import model_opsets
from .compress import compress
from .context import Context, mil_name
from .fp16_range import with_fp16_safe_constants
from .mil import coremltools, quiet, without_collection
from .ops import CONVERTERS
from .reproducible import make_reproducible

COMPUTE_PRECISIONS = ("fp16", "fp32")
DEPLOYMENT_TARGETS = ("iOS16", "iOS17", "iOS18", "macOS13", "macOS14", "macOS15")
"""CoreML minimum deployment targets: the ML Program opset a CoreML model may use."""


@dataclass(frozen=True)
class Conversion:
    program: Any
    """The MIL program (coremltools `Program`)."""
    inputs: dict[str, str] = field(default_factory=dict)
    """ONNX input name -> CoreML feature name."""
    outputs: dict[str, str] = field(default_factory=dict)
    """ONNX output name -> CoreML feature name."""
    dtypes: dict[str, str] = field(default_factory=dict)
    """ONNX output name -> its ONNX element type (CoreML returns bool outputs as float32)."""


def to_program(model: onnx.ModelProto, deployment_target: str = "iOS16") -> Conversion:
    """The MIL program of an ONNX graph whose inputs have static shapes."""
    ct = coremltools()
    from coremltools.converters.mil.mil import Function, Program

    graph = model.graph
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    placeholders, names = {}, {}
    context = Context(dict(initializers), model_opsets(model).get("", 0))
    for value in graph.input:
        if value.name in initializers:
            continue
        names[value.name] = mil_name(value.name)
        placeholders[names[value.name]] = context.mb.placeholder(shape=_static_shape(value),
                                                                 dtype=_mil_type(value, context))
    context.used_names.update(names.values())
    with Function(placeholders, opset_version=_target(ct, deployment_target)) as function:
        for onnx_name, name in names.items():
            value = function.inputs[name]
            scalar = _is_scalar(graph, onnx_name)
            context.values[onnx_name] = context.mb.squeeze(x=value, name=context.unique(f"{name}_scalar")) \
                if scalar else value
        for node in graph.node:
            _convert_node(context, node)
        outputs, output_names = _outputs(context, graph)
        function.set_outputs(outputs)
    program = Program()
    program.add_function("main", function)
    dtypes = {v.name: onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type).name for v in graph.output}
    return Conversion(program, names, output_names, dtypes)


def to_mlpackage(model: onnx.ModelProto, path: Path, options: Mapping[str, Any]) -> Conversion:
    """Convert and save an `.mlpackage` at `path`. `options`: deployment_target, compute_precision (fp16/fp32),
    weights (fp32, fp16, int8, palette4, palette6, palette8). A plain session computes in fp32; the iphone profile
    asks fp16."""
    ct = coremltools()
    target = options.get("deployment_target", "iOS16")
    precision = options.get("compute_precision", "fp32")
    if precision not in COMPUTE_PRECISIONS:
        raise EdgepackError(f"CoreML compute precision {precision!r} is not one of {', '.join(COMPUTE_PRECISIONS)}",
                            where="coreml provider", fix="use fp16 (the default) or fp32")
    conversion = to_program(with_fp16_safe_constants(model) if precision == "fp16" else model, target)
    with quiet(), without_collection():
        converted = ct.convert(conversion.program, convert_to="mlprogram",
                               minimum_deployment_target=_target(ct, target),
                               compute_precision=ct.precision.FLOAT16 if precision == "fp16" else ct.precision.FLOAT32,
                               skip_model_load=True)
        try:
            mlmodel = compress(converted, options.get("weights", precision))
            try:
                mlmodel.short_description = f"{model.graph.name or 'model'}, converted by edgepack"
                mlmodel.save(str(path))
                description = mlmodel.get_spec().description
            finally:
                _remove_temporary_package(mlmodel)
        finally:
            _remove_temporary_package(converted)
    make_reproducible(path)
    return _as_saved(conversion, description)


def _remove_temporary_package(mlmodel: Any) -> None:
    """coremltools keeps each converted or compressed model as a whole `.mlpackage` in the temporary folder until
    the process exits; a build that tries many partitions, or a notebook that builds many bundles, would fill it."""
    if getattr(mlmodel, "is_temp_package", False):
        shutil.rmtree(mlmodel.package_path, ignore_errors=True)


def _as_saved(conversion: Conversion, description: Any) -> Conversion:
    """The feature names as saved: coremltools renames some (a `state` input becomes `state_workaround`), keeping
    the order of the program's inputs and outputs."""
    inputs = dict(zip(conversion.inputs, (feature.name for feature in description.input)))
    outputs = dict(zip(conversion.outputs, (feature.name for feature in description.output)))
    return replace(conversion, inputs=inputs, outputs=outputs)


def _convert_node(context: Context, node: onnx.NodeProto) -> None:
    if node.op_type == "Constant":
        context.values[node.output[0]] = constant_value(node)
        return
    converter = CONVERTERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if converter is None:
        raise EdgepackError(f"the CoreML converter has no {node.op_type} op", where=f"node {node.name or node.op_type}",
                            fix="leave the node to the fallback provider (the partitioner does this from the coreml "
                                "provider's claims)")
    converter.convert(context, node)


CONSTANT_FORMS = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                  "value_ints": np.int64}


def constant_value(node: onnx.NodeProto) -> np.ndarray:
    """A Constant node's value: a tensor, or a float/int (list) attribute."""
    attr = node.attribute[0]
    if attr.name == "value":
        return numpy_helper.to_array(attr.t)
    return np.array(onnx.helper.get_attribute_value(attr), dtype=CONSTANT_FORMS[attr.name])


def _outputs(context: Context, graph: onnx.GraphProto) -> tuple[list[Any], dict[str, str]]:
    """The graph outputs as MIL vars named after them (an identity where a var already has another name)."""
    outputs, names = [], {}
    for value in graph.output:
        name = mil_name(value.name)
        result = context.get(value.name)
        if isinstance(result, np.ndarray) or result.name != name or result in outputs:
            result = context.mb.identity(x=result, name=context.unique(name))
        outputs.append(result)
        names[value.name] = result.name
    return outputs, names


def _static_shape(value: onnx.ValueInfoProto) -> tuple[int, ...]:
    """The input's dims; a scalar is fed as shape (1,), since CoreML has no rank-0 inputs."""
    dims = value.type.tensor_type.shape.dim
    if not value.type.tensor_type.HasField("shape") or any(not d.HasField("dim_value") for d in dims):
        raise EdgepackError(f"CoreML input {value.name!r} needs a static shape", where="coreml provider",
                            fix="pin its dims with --input-shape or the profile's [shapes] table")
    return tuple(d.dim_value for d in dims) or (1,)


def _is_scalar(graph: onnx.GraphProto, name: str) -> bool:
    value = next(v for v in graph.input if v.name == name)
    return value.type.tensor_type.HasField("shape") and not value.type.tensor_type.shape.dim


def _mil_type(value: onnx.ValueInfoProto, context: Context) -> Any:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
    table = {np.float32: context.types.fp32, np.float16: context.types.fp16, np.int32: context.types.int32}
    if dtype.type not in table:
        raise EdgepackError(f"CoreML input {value.name!r} is {dtype.name}; CoreML models take float32, float16 "
                            "or int32 inputs", where="coreml provider",
                            fix="leave this input to a fallback partition")
    return table[dtype.type]


def _target(ct: Any, name: str) -> Any:
    if name not in DEPLOYMENT_TARGETS:
        raise EdgepackError(f"CoreML deployment target {name!r} is not one of {', '.join(DEPLOYMENT_TARGETS)}",
                            where="coreml provider", fix="set the profile's [coreml] deployment_target")
    return getattr(ct.target, name)
