"""`EmulatedSession` served (`ep_run --serve`): one runner, node with the wasm core or qemu-aarch64 with the ARM64
ep_run, serves every run of a process; a failure fails that run alone and a runner that died is started again."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import WASM_GLUE, aarch64_runner, wasm_core
from edgepack.runtime.native.emulated import EmulatedSession, qemu
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, plan, reference_outputs, relative_error


def runner_command(provider: str) -> list[str]:
    if provider == "wasm":
        return [str(shutil.which("node")), str(WASM_GLUE), str(wasm_core())]
    return [str(qemu()), str(aarch64_runner())]


@pytest.mark.parametrize("provider", ["wasm", "neon"])
def test_the_served_runner_answers_a_failure_and_keeps_serving(provider: str) -> None:
    if PROVIDERS[provider].missing() is not None:
        pytest.skip(str(PROVIDERS[provider].missing()))
    command = runner_command(provider)
    served = EmulatedSession(plan("ppocr-cls"), command, served=True)
    assert served.server is not None
    served.run(feeds("ppocr-cls"))
    runner = served.server.process
    wrong_dtype = {name: value.astype(np.float64) for name, value in feeds("ppocr-cls").items()}
    with pytest.raises(EdgepackError, match="input 0"):
        served.run(wrong_dtype)
    outputs = served.run(feeds("ppocr-cls"))
    assert served.server.process is runner
    runner.kill()
    runner.wait()
    outputs_after_restart = EmulatedSession(plan("ppocr-cls"), command, served=True).run(feeds("ppocr-cls"))
    assert served.server.process is not runner
    for key, value in reference_outputs("ppocr-cls").items():
        assert relative_error(value, outputs[key]) <= TOLERANCE, key
        assert relative_error(value, outputs_after_restart[key]) <= TOLERANCE, key


def test_a_time_limit_runs_each_run_on_its_own() -> None:
    """A runner served for many runs could not be stopped for one: with `timeout_s`, no server."""
    assert EmulatedSession(plan("ppocr-cls"), ["qemu-aarch64", "ep_run"], timeout_s=60, served=True).server is None
