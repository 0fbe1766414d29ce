"""The `neon` provider (the core cross-compiled for ARM64, run under qemu-aarch64): every sample model matches
`reference` within 1e-4 (max abs diff over the output's scale)."""

from __future__ import annotations

import pytest

from edgepack import samples
from edgepack.runtime.providers import PROVIDERS

from .sample_plans import TOLERANCE, feeds, reference_outputs, relative_error, slimmed

pytestmark = pytest.mark.skipif(PROVIDERS["neon"].missing() is not None,
                                reason=str(PROVIDERS["neon"].missing()))


@pytest.mark.parametrize("name", samples.names())
def test_sample_matches_reference_on_neon(name: str) -> None:
    outputs = PROVIDERS["neon"].compile(slimmed(name), {}).run(feeds(name, emulated=True))
    for key, value in reference_outputs(name, emulated=True).items():
        assert outputs[key].shape == value.shape
        assert relative_error(value, outputs[key]) <= TOLERANCE, key
