"""The wasm core's threads in headless Chromium: a cross-origin isolated page (COOP and COEP) runs the threaded core
on its thread and module Workers, with the one-thread core's outputs bit for bit; a page that is not isolated runs
on one thread and says why; what the threaded page fetches stays within the runtime budget."""

from __future__ import annotations

import numpy as np
import pytest

from edgepack.targets.web.chromium import Chromium, run_bundle

from .test_in_chromium import WEB_RUNTIME_BUDGET, module_url
from .web_builds import TOLERANCE, WebBuilds, relative_error

THREADS_ERROR = """async ({ module, threads }) => {
  try {
    const { createSession } = await import(module);
    await createSession({ providers: ["wasm"], threads });
    return "no error";
  } catch (error) {
    return error.message;
  }
}"""


def run(web: WebBuilds, browser: Chromium, name: str, threads: int) -> tuple[dict, set[str]]:
    """The bundle of `name` on the wasm core with `threads` in a fresh tab of `browser`: run_bundle's result, and the
    bundle's files the tab (its Workers included) requested."""
    bundle = web.bundle(name)
    page = browser.page()
    result = run_bundle(page, module_url(web, browser, bundle), web.feeds(name),
                        {k: v.dtype.name for k, v in web.reference(name).items()}, ["wasm"], threads=threads)
    page.close()
    prefix = web.path_in_root(bundle) + "/"
    return result, {path.removeprefix(prefix) for path in page.requests if path.startswith(prefix)}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppocr-rec", "ppocr-det", "silero-vad"])
def test_an_isolated_page_runs_the_threaded_core_with_the_one_thread_outputs(web: WebBuilds,
                                                                            isolated_chromium: Chromium,
                                                                            name: str) -> None:
    two, files = run(web, isolated_chromium, name, 2)
    one, _ = run(web, isolated_chromium, name, 1)
    assert two["threads"] == {"count": 2} and one["threads"] == {"count": 1}
    assert {"runtime/edgepack-threads.wasm", "runtime/wasm_worker.js"} <= files, files
    assert "runtime/edgepack.wasm" not in files
    for output, value in web.reference(name).items():
        assert np.array_equal(one["outputs"][output], two["outputs"][output]), output
        assert relative_error(value, two["outputs"][output]) <= TOLERANCE, output
    runtime = [path for path in files if not path.startswith("model/")]
    assert sum((web.bundle(name) / path).stat().st_size for path in runtime) <= WEB_RUNTIME_BUDGET, sorted(runtime)


@pytest.mark.slow
def test_a_page_that_is_not_isolated_runs_on_one_thread_and_says_why(web: WebBuilds, chromium: Chromium) -> None:
    result, files = run(web, chromium, "ppocr-cls", 2)
    assert result["threads"]["count"] == 1
    assert "Cross-Origin-Opener-Policy: same-origin" in result["threads"]["reason"]
    assert "runtime/edgepack.wasm" in files and "runtime/wasm_worker.js" not in files, files


@pytest.mark.slow
@pytest.mark.parametrize("threads", [0, 1.5, "2"])
def test_a_thread_count_that_is_not_a_whole_number_rejects(web: WebBuilds, isolated_chromium: Chromium,
                                                          threads: object) -> None:
    page = isolated_chromium.page()
    message = page.evaluate(THREADS_ERROR, {"module": module_url(web, isolated_chromium, web.bundle("ppocr-cls")),
                                            "threads": threads})
    page.close()
    assert message.startswith("edgepack: threads must be a whole number, 1 or more"), message


OPEN_ON_THREE_THREADS = """async ({ module }) => {
  const { createSession } = await import(module);
  globalThis.session = await createSession({ providers: ["wasm"], threads: 3 });
  return globalThis.session.threads.count;
}"""


@pytest.mark.slow
def test_release_stops_the_workers(web: WebBuilds, isolated_chromium: Chromium) -> None:
    page = isolated_chromium.page()
    module = module_url(web, isolated_chromium, web.bundle("ppocr-cls"))
    assert page.evaluate(OPEN_ON_THREE_THREADS, {"module": module}) == 3
    assert len(page.workers) == 2
    page.evaluate("() => globalThis.session.release()")
    for _ in range(100):
        if not page.workers:
            break
        page.wait_for_timeout(50)
    assert page.workers == []
    page.close()
