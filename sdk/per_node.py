"""`edgepack build --per-node`: where in the graph a bundle drifts from the fp32 source. Each partition's graph runs
on its provider (an emulated one on its host stand-in) with every value exposed, fed what the partitions before it
computed, as the bundle runs; each value it shares by name with the slimmed fp32 model on `reference` is compared,
in graph order. The first whose cosine falls below the profile's tolerance (by more than a negligible diff) is the
node to look at: it holds the precision loss or the provider's error that the outputs show."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from edgepack.packager.lower import Lowered
from edgepack.packager.profile import Profile

from .verify import NEGLIGIBLE_DIFF, compare

WORST = 5
"""How many of the worst values the report lists beside the first drift."""


def every_value_as_output(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose node outputs of known type are all graph outputs too."""
    inferred = onnx.shape_inference.infer_shapes(model)
    typed = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    exposed = onnx.ModelProto()
    exposed.CopyFrom(inferred)
    known = {o.name for o in exposed.graph.output}
    exposed.graph.output.extend(typed[name] for node in model.graph.node for name in node.output
                                if name in typed and name not in known)
    return exposed


def drifted(metrics: dict[str, Any], profile: Profile) -> bool:
    return (metrics["cosine"] < profile.required_cosine
            and metrics["max_abs_diff"] > NEGLIGIBLE_DIFF * max(1.0, metrics["scale"]))


def per_node(source: onnx.ModelProto, lowered: list[Lowered], feeds: dict[str, np.ndarray],
             profile: Profile) -> dict[str, Any]:
    """The first drifting value, the worst ones and how many were compared (see the module's docstring)."""
    from onnx.reference import ReferenceEvaluator

    from edgepack.runtime.providers import PROVIDERS
    from edgepack.runtime.providers.reference import FIXES

    with np.errstate(all="ignore"):
        expected = ReferenceEvaluator(source, new_ops=FIXES).run(None, feeds, intermediate=True)
    values = dict(feeds)
    rows = []
    for low in lowered:
        part = low.partition
        provider = PROVIDERS[part.provider].host_stand_in or part.provider
        compiled = PROVIDERS[provider].compile(every_value_as_output(part.model), low.options)
        computed = compiled.run({name: values[name] for name in part.inputs})
        values.update(computed)
        for node in part.model.graph.node:
            for name in node.output:
                value = computed.get(name)
                if value is None or name not in expected or np.asarray(value).dtype.kind != "f":
                    continue
                metrics = compare(np.asarray(expected[name]), np.asarray(value))
                rows.append({"node": node.name, "op": node.op_type, "output": name, "provider": part.provider,
                             "cosine": metrics["cosine"], "max_abs_diff": metrics["max_abs_diff"],
                             "drifted": drifted(metrics, profile)})
    first = next((row for row in rows if row["drifted"]), None)
    return {"compared": len(rows), "first_drift": first,
            "worst": sorted(rows, key=lambda row: row["cosine"])[:WORST]}


def per_node_summary(report: dict[str, Any]) -> str:
    first = report["first_drift"]
    if first is None:
        return f"no value drifts among {report['compared']} compared"
    return (f"first drift at node {first['node']!r} ({first['op']}, {first['provider']}): output {first['output']!r} "
            f"cosine {first['cosine']:.6g}, max abs diff {first['max_abs_diff']:.3g}; {report['compared']} compared")
