"""Running whole models on the runtime for the build's stages: the model's input specs, and a profile's first
provider at full precision (calibration and sensitivity measure on it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from edgepack.packager.profile import Profile
from edgepack.runtime import Session
from edgepack.runtime.providers import PROVIDERS


def model_inputs(model: onnx.ModelProto) -> list[Any]:
    """The model's input specs (name, dtype, shape), as `Session.inputs` gives them."""
    return Session(model, providers=["reference"]).inputs


def profile_runner(profile: Profile) -> Callable[[onnx.ModelProto, dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Runs a whole model on the profile's first provider in full precision (on its host stand-in where it runs
    under emulation here: `neon` on `cpu`, the same core built for this machine), or on `reference` when that one
    refuses it. The session is kept while the same model object is run again (calibration runs one model on every
    sample)."""
    provider = profile.providers[0]
    stand_in = PROVIDERS[provider].host_stand_in if provider in PROVIDERS else None
    if stand_in and PROVIDERS[stand_in].missing() is None:
        provider = stand_in
    last: list[tuple[onnx.ModelProto, Session]] = []

    def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not last or last[0][0] is not model:
            try:
                session = Session(model, providers=[provider], full_precision=True)
            except Exception:  # noqa: BLE001  (an accelerator that cannot compile the whole model)
                session = Session(model, providers=["reference"])
            last[:] = [(model, session)]
        return last[0][1].run(feeds)

    return run
