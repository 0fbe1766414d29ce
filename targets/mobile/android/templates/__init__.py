"""The Android module's fixed files, with `@NAME@` placeholders filled by `render`."""

from __future__ import annotations

from pathlib import Path

from ....templating import render_file

FOLDER = Path(__file__).parent


def render(template: str, **values: str) -> str:
    """The template file `template` with each `@KEY@` replaced by `values[KEY]`; every placeholder must be given."""
    return render_file(FOLDER / template, values)
