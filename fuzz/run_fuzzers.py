"""Coverage-guided fuzzing of everything that reads a bundle, with libFuzzer's engine, and its figures.

    python fuzz/run_fuzzers.py                                  # 10^7 executions in all (about 5 minutes)
    python fuzz/run_fuzzers.py --scale 0.01                     # a short run (CI)
    python fuzz/run_fuzzers.py --update-corpus                  # also merge new coverage into fuzz/corpus/

Targets:
- `epk-load`: the C core's plan loader (`ep_required_bytes`, `ep_open`, every input's and output's bytes and
  name), built with clang -fsanitize=fuzzer,address,undefined (runtime/native/cli/ep_libfuzzer.c);
- `epk-run`: the same, and every plan the loader accepts is run once (the kernels behind the loader's checks);
- `manifest`: `read_manifest` and `Session(bundle)` on a bundle whose manifest.json is the input (atheris,
  fuzz/bundle_fuzz.py): any exception but a one-paragraph EdgepackError is a crash.

Seeds: the kept corpus in fuzz/corpus/<target>, and for the plans, the tiny sample models' plans. Each target runs
on a copy of its corpus; it prints, per target, the executions, the coverage (libFuzzer's `cov` edges and `ft`
features at the end), the corpus size and the crashes (the inputs libFuzzer wrote), and exits 1 on any crash.
The targets' temporary files (the manifest target's bundles) go in the run's own folder, removed at its end:
libFuzzer ends a process without running its exit handlers."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

FUZZ = Path(__file__).parent
sys.path.insert(0, str(FUZZ))

from epk_fuzz import seed_plans  # noqa: E402

from edgepack.runtime.native.build import libfuzzer  # noqa: E402

EXECUTIONS = {"epk-load": 9_600_000, "epk-run": 200_000, "manifest": 200_000}
"""Executions per target at --scale 1: 10^7 in all."""
MAX_LEN = {"epk-load": 16384, "epk-run": 16384, "manifest": 32768}
SEED_MODELS = ["tiny-cnn", "tiny-if"]
"""Plans small enough for fast mutation (16 KB at most)."""


@dataclass
class Figures:
    target: str
    executions: int
    cov: int
    ft: int
    corpus: int
    crashes: list[str]
    seconds: float


def command(target: str) -> list[str]:
    if target == "manifest":
        return [sys.executable, str(FUZZ / "bundle_fuzz.py")]
    return [str(libfuzzer())]


def environment(target: str, work: Path) -> dict[str, str]:
    """The run's own TMPDIR, and for `epk-run`, EP_FUZZ_RUN (the one fuzzer binary then runs each accepted plan)."""
    return {**os.environ, "TMPDIR": str(work), **({"EP_FUZZ_RUN": "1"} if target == "epk-run" else {})}


def seed(target: str, corpus: Path) -> None:
    kept = FUZZ / "corpus" / ("epk" if target.startswith("epk") else target)
    if kept.is_dir():
        for path in kept.iterdir():
            shutil.copy(path, corpus / path.name)
    if target.startswith("epk"):
        with tempfile.TemporaryDirectory() as tmp:
            for plan in seed_plans(Path(tmp), SEED_MODELS):
                shutil.copy(plan, corpus / plan.name)


def run(target: str, executions: int, work: Path) -> Figures:
    corpus = work / target / "corpus"
    corpus.mkdir(parents=True)
    seed(target, corpus)
    artifacts = work / target / "crashes"
    artifacts.mkdir()
    proc = subprocess.run([*command(target), f"-runs={executions}", f"-max_len={MAX_LEN[target]}",
                           "-print_final_stats=1", "-timeout=20", f"-artifact_prefix={artifacts}/", str(corpus)],
                          capture_output=True, text=True, cwd=work, env=environment(target, work))
    log = proc.stderr
    final = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", log)
    cov, ft, size = map(int, final[-1]) if final else (0, 0, 0)
    executed = re.search(r"stat::number_of_executed_units: (\d+)", log)
    seconds = re.search(r"Done \d+ runs in (\d+) second", log)
    crashes = sorted(str(p) for p in artifacts.iterdir())
    if proc.returncode != 0 and not crashes:
        crashes = [f"exit {proc.returncode}: {log.strip().splitlines()[-1] if log.strip() else ''}"]
    return Figures(target, int(executed.group(1)) if executed else 0, cov, ft, size, crashes,
                   float(seconds.group(1)) if seconds else 0.0)


def update_corpus(target: str, work: Path) -> None:
    """Merges the run's corpus into the kept one: only inputs that add coverage are kept (libFuzzer -merge=1)."""
    kept = FUZZ / "corpus" / ("epk" if target.startswith("epk") else target)
    kept.mkdir(parents=True, exist_ok=True)
    subprocess.run([*command(target), "-merge=1", f"-max_len={MAX_LEN[target]}", str(kept),
                    str(work / target / "corpus")], capture_output=True, text=True, cwd=work, check=True,
                   env=environment(target, work))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of the 10^7 executions (default: 1)")
    parser.add_argument("--targets", nargs="*", default=list(EXECUTIONS), choices=list(EXECUTIONS))
    parser.add_argument("--update-corpus", action="store_true", help="merge new coverage into fuzz/corpus/")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="edgepack-fuzz-") as tmp:
        for target in args.targets:
            figures = run(target, max(1, int(EXECUTIONS[target] * args.scale)), Path(tmp))
            results.append(figures)
            if args.update_corpus and not figures.crashes:
                update_corpus(target, Path(tmp))
            print(f"{figures.target:9} {figures.executions:>11,} executions in {figures.seconds:5.0f} s, "
                  f"cov {figures.cov} edges, ft {figures.ft} features, corpus {figures.corpus}, "
                  f"crashes {len(figures.crashes)}", flush=True)
            for crash in figures.crashes:
                kept = FUZZ / "crashes" / Path(crash).name
                if Path(crash).is_file():
                    kept.parent.mkdir(exist_ok=True)
                    shutil.copy(crash, kept)
                print(f"  crash: {kept if Path(crash).is_file() else crash}")
    total = sum(f.executions for f in results)
    crashed = sum(len(f.crashes) for f in results)
    print(f"total: {total:,} executions, {crashed} crashes")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
