"""The `edgepack` command's entry point: loads the command line, so that a Ctrl-C while it is still loading ends
like one during a command (a line on stderr, exit code 130), not with a traceback."""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    return run()
