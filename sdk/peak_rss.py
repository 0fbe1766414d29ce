"""Peak resident memory of this process over a stretch of code, in MB (2**20 bytes).

On Linux the high-water mark is reset first (`5` written to /proc/self/clear_refs) and read back from VmHWM in
/proc/self/status, so each stretch gets its own peak. Where that fails, `resource.getrusage`'s ru_maxrss is used:
the peak of the whole process so far, which a stretch can only raise. The peak is never below the start: the kernel
raises VmHWM lazily, so memory resident at the start and freed before the end can be missing from it."""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")


class PeakRSS:
    """`with PeakRSS() as rss: ...`, then `rss.peak_mb`, `rss.start_mb` and `rss.method`."""

    def __init__(self) -> None:
        self.method = ""
        self.start_mb = 0.0
        self.peak_mb = 0.0

    def __enter__(self) -> PeakRSS:
        self.method = "VmHWM" if _reset() else "ru_maxrss"
        self.start_mb = (_status_mb("VmRSS") if self.method == "VmHWM" else None) or _maxrss_mb()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        peak = _status_mb("VmHWM") if self.method == "VmHWM" else None
        if peak is None:
            self.method, peak = "ru_maxrss", _maxrss_mb()
        self.peak_mb = max(peak, self.start_mb)


def _reset() -> bool:
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return _status_mb("VmHWM") is not None


def _status_mb(key: str) -> float | None:
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _maxrss_mb() -> float:
    import resource  # not on Windows

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, kB elsewhere
