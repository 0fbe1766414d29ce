from __future__ import annotations

import pytest

from edgepack.runtime.providers import PROVIDERS

from .ios_builds import IosBuilds


@pytest.fixture(scope="session")
def ios_builds(tmp_path_factory: pytest.TempPathFactory) -> IosBuilds:
    for provider in ("coreml", "neon"):
        if reason := PROVIDERS[provider].missing():
            pytest.skip(f"{provider}: {reason}")
    return IosBuilds(tmp_path_factory.mktemp("ios"))
