"""Shared fixtures (the CLI run in-process) and the conformance counts per provider, printed after the run.

The counting hooks live here, not beside the conformance tests: under xdist only the root conftest is loaded by
the controller process, which prints the summary."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import edgepack
from edgepack import samples
from edgepack.cli import main
from tests.runtime.providers.node_backend import NOT_CLAIMED
from tests.small_feeds import small_feeds, small_shapes

EXTRA_OF_MODULE = {"onnxruntime": "test", "openvino": "openvino", "coremltools": "coreml", "playwright": "test",
                   "tree_sitter": "test", "tree_sitter_swift": "test", "onnxsim": "bench"}
"""Packages some test modules import, and the extra of pyproject.toml that installs each."""


class ExtraModule(pytest.Module):
    """A test module that imports a package of an extra which is not installed is skipped, naming the extra."""

    def _getobj(self):  # noqa: ANN202  (pytest's own signature)
        try:
            return super()._getobj()
        except pytest.Collector.CollectError as error:
            cause = error.__cause__
            name = (cause.name or "") if isinstance(cause, ModuleNotFoundError) else ""
            extra = EXTRA_OF_MODULE.get(name.split(".")[0])
            if extra is None:
                raise
            raise pytest.skip.Exception(f"needs the [{extra}] extra ({name} is not installed: "
                                        f"pip install 'edgepack[{extra}]')", allow_module_level=True) from None


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    return ExtraModule.from_parent(parent, path=module_path)


@pytest.fixture(scope="session")
def generic_bundle(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], edgepack.BuildResult]:
    """The generic bundle of sample `name` at the size tests run it (`small_feeds`), verified on those feeds, built
    once per test process and shared by the test files that read it."""
    root = tmp_path_factory.mktemp("generic")
    built: dict[str, edgepack.BuildResult] = {}

    def bundle(name: str) -> edgepack.BuildResult:
        if name not in built:
            built[name] = edgepack.build(samples.path(name), "generic", root, sample_inputs=[small_feeds(name)],
                                         input_shapes=small_shapes(name))
        return built[name]

    return bundle


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def message(self) -> str:
        """The error paragraph: stderr from its `error:` line on (progress lines come before it)."""
        return self.err[self.err.find("error:"):].strip() if "error:" in self.err else ""


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    def run(*args: str | Path) -> CliResult:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


COUNTS: dict[str, Counter[str]] = defaultdict(Counter)
CASE = re.compile(r"::TestNodeCases_(\w+)::test_\w+_cpu$")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """onnx's BackendTest makes each node case twice, for CPU and CUDA; no provider here runs CUDA (each backend
    says so, and the case skips), so the CUDA copies are deselected rather than collected as 11,000 skips."""
    cuda = [item for item in items if item.nodeid.endswith("_cuda") and "::TestNodeCases_" in item.nodeid]
    if cuda:
        config.hook.pytest_deselected(items=cuda)
        items[:] = [item for item in items if not (item.nodeid.endswith("_cuda") and "::TestNodeCases_" in item.nodeid)]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    match = CASE.search(report.nodeid)
    if not match or (report.when != "call" and not (report.when == "setup" and report.outcome != "passed")):
        return
    if report.skipped:
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        COUNTS[match.group(1)]["not claimed" if NOT_CLAIMED in reason else "skipped"] += 1
    else:
        COUNTS[match.group(1)][report.outcome] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    terminalreporter.section("onnx node-test conformance")
    for provider, counts in sorted(COUNTS.items()):
        terminalreporter.write_line(f"{provider:>10}: {counts['passed']} passed, {counts['failed']} failed, "
                                    f"{counts['not claimed']} not claimed (of {sum(counts.values())})")
