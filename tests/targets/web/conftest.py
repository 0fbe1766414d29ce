"""One `WebBuilds` and one headless Chromium per test run (per xdist worker), and one that serves the same folder
cross-origin isolated (shared memory, the wasm core's threads): the tests of this folder share them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from edgepack.targets.web.chromium import Chromium, missing

from .web_builds import WebBuilds


@pytest.fixture(scope="session")
def web(tmp_path_factory: pytest.TempPathFactory) -> WebBuilds:
    return WebBuilds(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="session")
def chromium(web: WebBuilds) -> Iterator[Chromium]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    with Chromium(web.root) as browser:
        yield browser


@pytest.fixture(scope="session")
def isolated_chromium(web: WebBuilds) -> Iterator[Chromium]:
    reason = missing()
    if reason:
        pytest.skip(reason)
    with Chromium(web.root, isolated=True) as browser:
        yield browser
