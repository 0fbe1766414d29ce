"""The line budget: no source file of the project over 500 lines, so that each stays one readable job."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("sdk", "runtime", "compiler", "packager", "targets", "samples", "tests", "benchmarks", "fuzz")
SUFFIXES = {".py", ".js", ".mjs", ".c", ".h", ".S", ".swift", ".wgsl", ".sh", ".ts"}
BUDGET = 500


def over_budget(root: Path = ROOT) -> dict[str, int]:
    """Source files (by path from `root`) with more than BUDGET lines, and their line counts."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and "node_modules" not in path.parts:
                lines = len(path.read_text(encoding="utf-8", errors="replace").splitlines())
                if lines > BUDGET:
                    found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_source_file_is_over_budget() -> None:
    assert over_budget() == {}


def test_a_long_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "targets" / "web").mkdir(parents=True)
    (tmp_path / "targets" / "web" / "long.js").write_text("x;\n" * (BUDGET + 1))
    (tmp_path / "sdk").mkdir()
    (tmp_path / "sdk" / "short.py").write_text("x = 1\n" * BUDGET)
    assert over_budget(tmp_path) == {"targets/web/long.js": BUDGET + 1}


def long_functions(path: Path, limit: int = 60) -> dict[str, int]:
    """Functions of `path` longer than `limit` lines, and their lengths."""
    tree = ast.parse(path.read_text())
    return {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > limit}


def test_the_build_reads_as_its_stages() -> None:
    """sdk/build.py is the list of stages: no function in it over 60 lines."""
    assert long_functions(ROOT / "sdk" / "build.py") == {}


def test_a_long_function_is_found(tmp_path: Path) -> None:
    path = tmp_path / "build.py"
    path.write_text("def build():\n" + "    x = 1\n" * 60 + "\n\ndef stage():\n    return 1\n")
    assert long_functions(path) == {"build": 61}
