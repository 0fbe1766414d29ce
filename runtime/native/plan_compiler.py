"""ONNX partitions on the C core's providers. The core runs `.epk` plans; lowering ONNX into plans (one per input-shape
signature) is `edgepack.compiler`'s job, found through the `edgepack.plan_compilers` entry point, so the runtime imports
no compiler code and a runtime without the compiler still runs bundles."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any

import onnx

from ..errors import EdgepackError
from ..providers import CompiledPartition

GROUP = "edgepack.plan_compilers"
OpenPlan = Callable[[bytes, onnx.ModelProto], Any]
"""Opens plan bytes (lowered from the model) as something with `run(feeds) -> outputs`."""


def planned(model: onnx.ModelProto, open_plan: OpenPlan) -> CompiledPartition:
    """`model` as a partition that lowers itself to a plan per input-shape signature and runs it with `open_plan`."""
    return _compiler()(model, open_plan)


@cache
def _compiler() -> Callable[[onnx.ModelProto, OpenPlan], CompiledPartition]:
    found = list(entry_points(group=GROUP, name="onnx"))
    if not found:
        raise EdgepackError("running a plain ONNX model on the C core needs edgepack's compiler to lower it to a "
                            f"plan, and no package registers one (entry point group {GROUP!r})",
                            fix="install edgepack itself (pip install edgepack), or run a bundle built by "
                                "`edgepack build`, whose plans need no compiler")
    return found[0].load()
