"""The bundle's fixed files, with `@NAME@` placeholders filled by `render`."""

from __future__ import annotations

import re
from pathlib import Path

FOLDER = Path(__file__).parent
PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


def render(template: str, **values: str) -> str:
    """The template file `template` with each `@KEY@` replaced by `values[KEY]`; every placeholder must be given."""
    text = (FOLDER / template).read_text()
    left = set(PLACEHOLDER.findall(text)) - set(values)
    if left:
        raise ValueError(f"template {template}: no value for {', '.join(sorted(left))}")
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)
