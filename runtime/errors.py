"""The one exception type for user errors: what went wrong, where, and how to fix it."""

from __future__ import annotations


class EdgepackError(Exception):
    """A user error. The CLI prints it as one paragraph and exits non-zero, without a traceback."""

    exit_code = 2

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.paragraph())

    def paragraph(self) -> str:
        text = self.what.rstrip(".")
        if self.where:
            text += f" (at {self.where})"
        text += "."
        if self.fix:
            text += " " + self.fix[:1].upper() + self.fix[1:].rstrip(".") + "."
        return text
