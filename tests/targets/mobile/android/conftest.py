"""One `AndroidBuilds` per test run: bundles and drivers are shared by the tests of this folder."""

from __future__ import annotations

import pytest

from edgepack.targets.mobile.android.bundle import missing_tools

from .android_builds import AndroidBuilds, tools_missing


@pytest.fixture(scope="session")
def android_builds(tmp_path_factory: pytest.TempPathFactory) -> AndroidBuilds:
    if reason := missing_tools():
        pytest.skip(reason)
    if missing := tools_missing():
        pytest.skip(f"not installed: {', '.join(missing)}")
    return AndroidBuilds(tmp_path_factory.mktemp("android"))
