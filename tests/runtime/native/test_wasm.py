"""The `wasm` provider (the core built for wasm32 + SIMD128 with clang, run in node): every sample model matches
`reference` within 1e-4 (max abs diff over the output's scale), and the module stays small and import-free."""

from __future__ import annotations

import subprocess

import pytest

from edgepack import samples
from edgepack.runtime.native.build import wasm_core
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, reference_outputs, relative_error, slimmed

pytestmark = pytest.mark.skipif(PROVIDERS["wasm"].missing() is not None,
                                reason=str(PROVIDERS["wasm"].missing()))


@pytest.mark.parametrize("name", samples.names())
def test_sample_matches_reference_on_wasm(name: str) -> None:
    outputs = PROVIDERS["wasm"].compile(slimmed(name), {}).run(feeds(name))
    for key, value in reference_outputs(name).items():
        assert outputs[key].shape == value.shape
        assert relative_error(value, outputs[key]) <= TOLERANCE, key


def test_wasm_core_is_small_and_imports_nothing() -> None:
    """The whole core, every kernel of the op contract, stays under 256 KB (230 KB with the 48 plan ops of
    2026-11-25, up from 198 KB with 37; 250 KB on 2026-11-26 with the vector loops of exp, erf, Softmax, Max/Min,
    max pools and quantization, the few-row and narrow products, and B read in place). A bundle's own core, holding
    only its plan's kernels, is the way below that (issue 26)."""
    module = wasm_core().read_bytes()
    assert module[:4] == b"\0asm"
    assert len(module) < 256_000
    imports = subprocess.run(["node", "-e", f"const m = new WebAssembly.Module(require('fs').readFileSync("
                                            f"'{wasm_core()}')); console.log(WebAssembly.Module.imports(m).length)"],
                             capture_output=True, text=True)
    assert imports.stdout.strip() == "0"
