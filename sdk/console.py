"""The command line's two consoles: results on stdout, progress and errors on stderr."""

from __future__ import annotations

from rich.console import Console

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)
