"""The `wasm` provider (the core built for wasm32 + SIMD128 with clang, run in node): every sample model matches
`reference` within 1e-4 (max abs diff over the output's scale), and the module stays small and import-free."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from edgepack import samples
from edgepack.compiler.lower import lower_to_plan
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import NATIVE, WASM_GLUE, WASM_OPTIMIZATION, wasm_core
from edgepack.runtime.native.emulated import EmulatedSession
from edgepack.runtime.providers import PROVIDERS
from edgepack.targets.web.bundle import bundle_core

from .sample_plans import TOLERANCE, feeds, plan, reference_outputs, relative_error, slimmed

pytestmark = pytest.mark.skipif(PROVIDERS["wasm"].missing() is not None,
                                reason=str(PROVIDERS["wasm"].missing()))


@pytest.mark.parametrize("name", samples.names())
def test_sample_matches_reference_on_wasm(name: str) -> None:
    outputs = PROVIDERS["wasm"].compile(slimmed(name), {}).run(feeds(name))
    for key, value in reference_outputs(name).items():
        assert outputs[key].shape == value.shape
        assert relative_error(value, outputs[key]) <= TOLERANCE, key


def test_wasm_core_is_small_and_imports_nothing() -> None:
    """The whole core, every kernel of the op contract, stays under 200 KB: 188 KB on 2026-11-27, when its hot
    kernels went to -O2 and the rest to -Os (WASM_OPTIMIZATION; 299 KB at -O3 throughout, with Int8MatMul and
    quantized PackedMatMul weights); 195 KB on 2026-11-29. No bundle ships it: each ships a core of its plans'
    kernels only (the test below)."""
    module = wasm_core().read_bytes()
    assert module[:4] == b"\0asm"
    assert len(module) < 200_000
    imports = subprocess.run(["node", "-e", f"const m = new WebAssembly.Module(require('fs').readFileSync("
                                            f"'{wasm_core()}')); console.log(WebAssembly.Module.imports(m).length)"],
                             capture_output=True, text=True)
    assert imports.stdout.strip() == "0"


def test_every_file_the_wasm_build_speeds_up_is_a_core_file() -> None:
    """A renamed or split kernel file leaves WASM_OPTIMIZATION naming a file that no longer exists, and its loops
    would silently go to -Os."""
    assert sorted(path for path in WASM_OPTIMIZATION if not (NATIVE / path).is_file()) == []


def test_a_bundles_own_core_holds_its_plans_kernels_only() -> None:
    """A web bundle's core is built for the ops of its plans (`bundle_core`): ppocr-cls's runs its plan as the whole
    core does in at most 60% of the bytes, and refuses a plan with an op it lacks (silero-vad's LSTM)."""
    cls_plan = lower_to_plan(slimmed("ppocr-cls"), {k: v.shape for k, v in feeds("ppocr-cls").items()})
    own = bundle_core([cls_plan])
    assert len(own.read_bytes()) <= 0.6 * len(wasm_core().read_bytes())
    command = [str(shutil.which("node")), str(WASM_GLUE), str(own)]
    outputs = EmulatedSession(plan("ppocr-cls"), command).run(feeds("ppocr-cls"))
    for key, value in reference_outputs("ppocr-cls").items():
        assert relative_error(value, outputs[key]) <= TOLERANCE, key
    with pytest.raises(EdgepackError, match="unknown op id in op"):
        EmulatedSession(plan("silero-vad"), command).run(feeds("silero-vad"))
