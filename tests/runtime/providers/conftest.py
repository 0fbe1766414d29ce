"""Counts of the node-test conformance cases per provider (passed, failed, not claimed), printed after the run."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from .node_backend import NOT_CLAIMED

COUNTS: dict[str, Counter[str]] = defaultdict(Counter)
CASE = re.compile(r"::TestNodeCases_(\w+)::test_\w+_cpu$")


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
