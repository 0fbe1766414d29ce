"""One `LibraryBuilds` per test run: bundles and cross-compiled examples are shared by the tests of this folder."""

from __future__ import annotations

import pytest

from edgepack.targets.embedded.example_run import missing_tools

from .library_builds import LibraryBuilds


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> LibraryBuilds:
    missing = missing_tools()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    return LibraryBuilds(tmp_path_factory.mktemp("embedded"))
