"""Shared fixtures: the CLI run in-process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from edgepack.cli import main


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
