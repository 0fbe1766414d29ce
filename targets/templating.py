"""Fills a bundle template's `@KEY@` placeholders."""

from __future__ import annotations

import re
from pathlib import Path

PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


def render_file(path: Path, values: dict[str, str]) -> str:
    """The file at `path` with each `@KEY@` replaced by `values[KEY]`; every placeholder must be given."""
    text = path.read_text()
    left = set(PLACEHOLDER.findall(text)) - set(values)
    if left:
        raise ValueError(f"template {path.name}: no value for {', '.join(sorted(left))}")
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)
