"""Soak: one Session run 10^5 times in this process; resident memory must not grow.

    python benchmarks/soak.py [--runs 100000] [--model tiny-cnn] [--provider cpu]

Builds the sample for `generic`, opens it on the provider, runs it on fixed inputs `--runs` times, and samples the
process's resident memory (VmRSS) every tenth of the runs. The first tenth is the warm-up (allocator pools,
caches); the growth reported is from the end of it to the end of the run, with the verdict against 1 MB. Prints
the CPU it ran on."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from edgepack import build, samples
from edgepack.devices.local import cpu_model
from edgepack.runtime import Session

LIMIT_MB = 1.0


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--model", default="tiny-cnn")
    parser.add_argument("--provider", default="cpu")
    args = parser.parse_args(argv)
    feeds = samples.feeds(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        bundle = build(samples.path(args.model), "generic", tmp, verify=False).bundle_dir
        session = Session(bundle, providers=[args.provider])
        step = max(1, args.runs // 10)
        samples_mb = [rss_mb()]
        start = time.perf_counter()
        for index in range(1, args.runs + 1):
            session.run(feeds)
            if index % step == 0:
                samples_mb.append(rss_mb())
        seconds = time.perf_counter() - start
    growth = samples_mb[-1] - samples_mb[1]
    print(f"CPU: {cpu_model()}")
    print(f"{args.runs:,} runs of {args.model} on {args.provider} in {seconds:.1f} s")
    print("resident MB every tenth: " + ", ".join(f"{value:.1f}" for value in samples_mb))
    print(f"growth after the first tenth: {growth:+.2f} MB (limit {LIMIT_MB} MB): "
          f"{'PASS' if growth <= LIMIT_MB else 'FAIL'}")
    return 0 if growth <= LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
