"""One Session called from several Python threads at once: the runs take turns and every thread gets the outputs of
its own inputs (the C core's arena holds one run; ctypes lets threads into it together without the session's
lock)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from edgepack import build, samples
from edgepack.runtime import Session


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(samples.path("ppocr-cls"), "generic", tmp_path_factory.mktemp("threads"), verify=False).bundle_dir


def test_threads_sharing_a_session_each_get_their_own_outputs(bundle: Path) -> None:
    session = Session(bundle, providers=["cpu"])
    shape = samples.feeds("ppocr-cls")["x"].shape
    feeds = [{"x": np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)} for seed in range(8)]
    expected = [session.run(feed) for feed in feeds]

    def runs(index: int) -> list[bool]:
        return [all(np.array_equal(value, expected[index][name]) for name, value in session.run(feeds[index]).items())
                for _ in range(25)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(runs, range(8)))
    assert all(all(result) for result in results)
