"""The documentation matches the code: every `edgepack ...` line in a code block parses with the real CLI parser,
every `python X.py` and `./dev X` in a code block names a script or subcommand that exists, every relative Markdown
link points at a file, and the README stays short."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from edgepack.cli import parser

ROOT = Path(__file__).resolve().parent.parent.parent
README_LIMIT = 10_000
"""Bytes: the README is the front page; details belong in docs/."""
DEV_COMMANDS = ("demo", "test")
"""The subcommands `./dev` accepts."""

FENCE = re.compile(r"^(```|~~~)")
PROMPT = re.compile(r"^\s*(?:\$\s+)?")
SCRIPT = re.compile(r"(?:^|\s)python3?\s+(?:-\S+\s+)*([\w./-]+\.py)\b")
DEV = re.compile(r"(?:^|\s)\./dev(?:\s+(\S+))?")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("targets/*/README.md"))]


DOCS = doc_files()
IDS = [str(path.relative_to(ROOT)) for path in DOCS]


def code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line inside a fenced code block, backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    inside, pending, start = False, "", 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        if pending:
            line = pending + " " + line.strip()
        else:
            start = number
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1].rstrip()
            continue
        pending = ""
        lines.append((start, line))
    return lines


def cli_commands(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line number, text, argv) of every code-block line that starts with `edgepack ` (after an optional `$ `);
    argv is split as a shell would, without a trailing `# comment`."""
    found = []
    for number, line in code_lines(path):
        text = PROMPT.sub("", line, count=1)
        if text.startswith("edgepack "):
            found.append((number, text.strip(), shlex.split(text, comments=True)))
    return found


def parse_error(argv: list[str]) -> str | None:
    """None when the CLI parser accepts `edgepack ARGV...`, else argparse's message."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            parser().parse_args(argv[1:])
    except SystemExit:
        message = stderr.getvalue().strip()
        return message.splitlines()[-1] if message else "the parser exited"
    return None


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_cli_lines_parse(path: Path) -> None:
    failures = [f"{path.relative_to(ROOT)}:{number}: {text!r}: {error}"
                for number, text, argv in cli_commands(path) if (error := parse_error(argv))]
    assert not failures, "edgepack commands in code blocks that the CLI parser refuses:\n" + "\n".join(failures)


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_scripts_and_dev_commands_exist(path: Path) -> None:
    failures = []
    for number, line in code_lines(path):
        text = line.split(" #")[0]
        for script in SCRIPT.findall(text):
            if not (ROOT / script).is_file():
                failures.append(f"{path.relative_to(ROOT)}:{number}: no script {script}")
        for command in DEV.findall(text):
            if command not in DEV_COMMANDS:
                failures.append(f"{path.relative_to(ROOT)}:{number}: ./dev has no subcommand {command!r} "
                                f"(it accepts {', '.join(DEV_COMMANDS)})")
    assert not failures, "\n".join(failures)


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link outside code blocks and code spans."""
    found = []
    inside = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            found += [(number, target) for target in LINK.findall(INLINE_CODE.sub("", line))]
    return found


@pytest.mark.parametrize("path", DOCS, ids=IDS)
def test_relative_links_resolve(path: Path) -> None:
    failures = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, a mail address or an anchor in the same page
        file = (path.parent / target.split("#")[0]).resolve()
        if not file.exists():
            failures.append(f"{path.relative_to(ROOT)}:{number}: link to {target} points at no file")
    assert not failures, "\n".join(failures)


def test_readme_is_short() -> None:
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_LIMIT, f"README.md is {size} bytes, over {README_LIMIT}: move details into docs/"


def test_every_doc_page_is_found() -> None:
    """The checks above cover the README, docs/ and the target READMEs; the README links every docs page."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").iterdir() if p.is_file())
    unlinked = [page for page in pages if f"]({page})" not in readme]
    assert not unlinked, f"README.md links no docs page {', '.join(unlinked)}"
    assert any(cli_commands(path) for path in DOCS), "no edgepack command found in any code block"
