"""Headless Chromium (Debian's `chromium`, driven by Playwright for Python) with files served from a localhost
folder: how the tests and `edgepack bench --device chromium` run web bundles in a real browser. WebGPU there runs
on SwiftShader (a CPU rasterizer): right results, no GPU speed."""

from __future__ import annotations

import atexit
import base64
import functools
import http.server
import shutil
import tempfile
import threading
import urllib.parse
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.epk import numpy_dtype

from .typings import ARRAY_TYPES

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-unsafe-webgpu"]
"""Chromium flags: headless as root, no network of its own, WebGPU on SwiftShader."""
BLANK = "edgepack-blank.html"
NUMPY_DTYPES = {name: numpy_dtype(name) for name in ARRAY_TYPES}
"""The numpy dtype of each dtype a web bundle's inputs and outputs may have."""


def missing() -> str | None:
    """Why Chromium cannot be driven here, or None."""
    if shutil.which("chromium") is None:
        return "Debian's chromium is not installed (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright; never `playwright install`)"
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the root folder, and a blank page at /edgepack-blank.html for tabs that only import modules; with
    `isolated`, every response carries the headers that make a page cross-origin isolated (shared memory)."""

    def __init__(self, *args: Any, isolated: bool = False, **kwargs: Any) -> None:
        self.isolated = isolated  # before the base class, which handles the request in its __init__
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path != f"/{BLANK}":
            super().do_GET()
            return
        body = b'<!doctype html><link rel="icon" href="data:,"><title>edgepack</title>'
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base class's name)
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()


@functools.cache
def _playwright() -> Any:
    """The process's one Playwright driver: its sync API allows a single one per thread, so every `Chromium` (each
    with its own browser and profile) shares it; it stops when the process exits."""
    from playwright.sync_api import sync_playwright

    driver = sync_playwright().start()
    atexit.register(driver.stop)
    return driver


class Chromium:
    """`with Chromium(folder) as browser: page = browser.page(); page.goto(browser.url("x/demo/index.html"))`; with
    `isolated`, the folder is served with COOP and COEP, so that its pages are cross-origin isolated."""

    def __init__(self, root: Path, isolated: bool = False) -> None:
        reason = missing()
        if reason:
            raise EdgepackError(f"headless Chromium cannot run here: {reason}", where="chromium",
                                fix="install chromium and playwright (./dev test does both)")
        self.root = Path(root)
        handler = functools.partial(_QuietHandler, directory=str(self.root), isolated=isolated)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.profile = tempfile.TemporaryDirectory(prefix="edgepack-chromium-")
        self.context = _playwright().chromium.launch_persistent_context(
            self.profile.name, executable_path=shutil.which("chromium"), headless=True, args=FLAGS)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{path}"

    def page(self, path: str = BLANK) -> Any:
        """A new tab on `path` (a blank page by default), its console messages and page errors in `.messages`, and
        the path (under the served folder) of every URL it requests in `.requests`."""
        page = self.context.new_page()
        page.messages, page.requests = [], []
        page.on("console", lambda message: page.messages.append((message.type, message.text)))
        page.on("pageerror", lambda error: page.messages.append(("pageerror", str(error))))
        page.on("request", lambda request: page.requests.append(urllib.parse.urlsplit(request.url).path[1:]))
        page.goto(self.url(path))
        return page

    def close(self) -> None:
        self.context.close()
        self.server.shutdown()
        self.server.server_close()
        self.profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


RUN_BUNDLE = "\n".join(line for line in (Path(__file__).parent / "run_bundle.js").read_text().splitlines()
                       if not line.startswith("//"))
"""Opens a bundle's index.js in the page, runs it on the given feeds, and returns the outputs and timings."""


def run_bundle(page: Any, module_url: str, feeds: dict[str, np.ndarray], dtypes: dict[str, str],
               providers: list[str] | str = "auto", repeat: int = 0, threads: int | None = None) -> dict[str, Any]:
    """Runs the bundle whose index.js is at `module_url` in `page` (the wasm core on `threads`, None: the bundle's
    default); outputs come back as numpy arrays (dtypes by output name), with `threads` (the session's),
    `coldStartMs` (import + fetch + compile + first run), `firstRunMs` and `runMs`."""
    encoded = {name: base64.b64encode(np.ascontiguousarray(value).tobytes()).decode() for name, value in feeds.items()}
    result = page.evaluate(RUN_BUNDLE, {"module": module_url, "providers": providers, "threads": threads,
                                        "feeds": encoded, "repeat": repeat})
    result["outputs"] = {
        name: np.frombuffer(base64.b64decode(value["data"]), NUMPY_DTYPES[dtypes[name]]).reshape(value["dims"])
        for name, value in result["outputs"].items()}
    return result
