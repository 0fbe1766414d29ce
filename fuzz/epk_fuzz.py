"""Seeded mutation fuzzing of the C core's plan loader and executor under AddressSanitizer + UBSan.

    python fuzz/epk_fuzz.py --seconds 60 --seed 1

Seeds are the `.epk` plans of the tiny sample models and silero-vad; each round mutates one (bit flips, boundary
values in header and table words, truncation), opens it and runs it when the core accepts it. Any sanitizer
report or crash ends the run with a non-zero status."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from edgepack import samples
from edgepack.compiler.lower import lower
from edgepack.model_check import check_model
from edgepack.packager.slim import slim
from edgepack.runtime.model_file import load_model
from edgepack.runtime.native.build import fuzzer

SEED_MODELS = ["tiny-cnn", "tiny-transformer", "tiny-if", "silero-vad"]


def seed_plans(folder: Path, names: list[str] = SEED_MODELS) -> list[Path]:
    """The sample models' plans (pinned to their sample inputs' shapes), written into `folder`."""
    paths = []
    for name in names:
        model = load_model(samples.path(name)).model
        check_model(model, name)
        plan = lower(slim(model)[0], {k: v.shape for k, v in samples.feeds(name).items()})
        paths.append(folder / f"{name}.epk")
        paths[-1].write_bytes(plan)
    return paths


def fuzz(seconds: float, seed: int) -> subprocess.CompletedProcess[str]:
    """Runs the harness; its stdout reads `rounds N accepted N ran N`."""
    binary = fuzzer()
    with tempfile.TemporaryDirectory() as tmp:
        plans = seed_plans(Path(tmp))
        return subprocess.run([str(binary), str(seconds), str(seed), *map(str, plans)], capture_output=True,
                              text=True, timeout=seconds + 600)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    result = fuzz(args.seconds, args.seed)
    print(result.stdout.strip())
    if result.returncode != 0:
        print(result.stderr[-4000:], file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
