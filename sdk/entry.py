"""The `edgepack` command's entry point. A Ctrl-C or a SIGTERM, from the first import to the end of the command,
ends it with "interrupted" and exit code 130, the build's temporary folder removed on the way out (a SIGTERM is
turned into the same KeyboardInterrupt), never with a traceback."""

from __future__ import annotations

import signal
import sys


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        from .cli import main as run

        return run()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the command is over: a late SIGTERM just ends the process
