"""Import cost of running bundles: what `from edgepack.runtime import Session` loads and how long it takes, beside
`import numpy, onnx` (the two dependencies every session needs) in the same way.

    python benchmarks/import_time.py [--runs 15]

Each run is a fresh interpreter (`python -X importtime -c ...`); the figures are medians over --runs, the two
statements alternating. "Beyond numpy/onnx" counts the modules that are neither the standard library's nor
numpy's or onnx's (edgepack's own and other dependencies). Targets: under 40 such modules, under 0.3 s in all.
"""

from __future__ import annotations

import argparse
import platform
import re
import statistics
import subprocess
import sys

SESSION = "from edgepack.runtime import Session"
PEER = "import numpy, onnx"
MODULES_TARGET = 40
SECONDS_TARGET = 0.3
ALLOWED = ("numpy", "onnx", "google", "ml_dtypes", "typing_extensions")
"""numpy and onnx, and the packages they import themselves (protobuf, ml_dtypes, typing_extensions)."""
PROBES = ("org", "sitecustomize")
"""Not modules a session loads: the standard library's probe for Jython (`org.python.core`) and the venv's hook."""


def import_profile(statement: str) -> tuple[float, list[str]]:
    """Cumulative seconds of the statement's top-level imports, and every module it loaded."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True,
                            check=True)
    seconds, modules, baseline = 0.0, [], set(sys.builtin_module_names)
    for line in result.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not match or match.group(4) in baseline:
            continue
        modules.append(match.group(4))
        if len(match.group(3)) == 1 and match.group(4) not in ("site", "encodings", "zipimport"):
            seconds += int(match.group(2)) / 1e6
    return seconds, modules


def beyond_numpy_onnx(modules: list[str]) -> list[str]:
    stdlib = sys.stdlib_module_names
    return list(dict.fromkeys(m for m in modules if m.split(".")[0] not in stdlib and not m.startswith("_")
                              and m.split(".")[0] not in ALLOWED + PROBES))


def cpu_name() -> str:
    for line in open("/proc/cpuinfo", encoding="utf-8"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {SESSION: [], PEER: []}
    loaded: dict[str, list[str]] = {}
    for _ in range(args.runs):
        for statement in times:
            seconds, loaded[statement] = import_profile(statement)
            times[statement].append(seconds)
    extra = beyond_numpy_onnx(loaded[SESSION])
    session, peer = (statistics.median(times[s]) for s in (SESSION, PEER))
    print(f"CPU: {cpu_name()}; {args.runs} runs each, medians")
    print(f"{PEER!r}: {peer * 1000:.0f} ms")
    print(f"{SESSION!r}: {session * 1000:.0f} ms ({session / peer:.2f}x numpy+onnx), {len(extra)} modules beyond "
          f"numpy/onnx: {', '.join(extra)}")
    ok = len(extra) < MODULES_TARGET and session < SECONDS_TARGET
    print(f"target (< {MODULES_TARGET} modules, < {SECONDS_TARGET} s): {'met' if ok else 'missed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
