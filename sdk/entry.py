"""The `edgepack` command's entry point. A Ctrl-C or a SIGTERM, from the first import to the end of the command,
ends it with "interrupted" and exit code 130, the build's temporary folder removed on the way out (a SIGTERM is
turned into the same KeyboardInterrupt), never with a traceback."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import NoReturn

INTERRUPTED = 130


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _exit_interrupted() -> NoReturn:
    """Ends the process with 130 once the exit handlers ran and the streams are flushed, skipping the interpreter's
    shutdown: after an interrupt, that shutdown was seen to end the process by SIGINT instead (4 of 110 builds sent
    a SIGTERM at random times, all of them after printing "interrupted"), a cause inside CPython not pinned down."""
    try:
        atexit._run_exitfuncs()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        from .cli import main as run

        code = run()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        code = INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the command is over: a late SIGTERM just ends the process
    if code == INTERRUPTED:
        _exit_interrupted()
    return code
