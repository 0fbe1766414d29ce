"""`edgepack bench BUNDLE --device DEVICE` for C library bundles: builds the bundle's example for the device's
architecture (aarch64 with the cross compiler, x86_64 with this machine's), pushes it with the plan and the inputs,
runs it there, pulls the outputs back and checks them against `reference` on the bundle's graph. The result follows
the bench result schema (docs/bench.schema.json)."""

from __future__ import annotations

import platform
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgepack.runtime.errors import EdgepackError

from .bench_result import check_output, result_dict, thread_count
from .devices import Device, DeviceFacts, open_device
from .input_files import check_names
from .op_profile import parse
from .sample_inputs import dims_of, sample_feeds
from .source_model import peer_model_path

MAX_RUNS = 1024
"""The example's limit for one call (its --repeat)."""
OPS_RUNS = 10
"""At most this many runs of the profiling build give the per-op times."""


def bench_library(bundle: str | Path, device: str, runs: int = 20, warmup: int = 2,
                  feeds: Mapping[str, np.ndarray] | None = None, dims: Mapping[str, int] | None = None, seed: int = 0,
                  identity: Path | None = None, profile_ops: bool = True, compare: Sequence[str] = (),
                  source: str | Path | None = None, threads: int = 1) -> dict[str, Any]:
    """Benchmarks a C library bundle's example on `device` (`warmup` untimed runs, then `runs` timed; on `threads`
    threads, the library then built with its thread pool) and returns the result as the bench schema's dict; with
    `profile_ops`, the profiling build of the core then times each op on the same device and inputs (up to OPS_RUNS
    runs). Each peer in `compare` (onnxruntime, openvino) then runs the source model (`source`, else found by its
    sha256) on this host, which must be the device, on as many threads: its results go in `peers`."""
    from edgepack.runtime import Session
    from edgepack.targets.embedded.example_run import cached_example, read_library

    if runs < 1 or warmup < 0 or runs + warmup > MAX_RUNS or threads < 1:
        raise EdgepackError(f"bad counts: runs {runs}, warmup {warmup}, threads {threads}",
                            fix=f"use --runs 1 or more and --warmup 0 or more, {MAX_RUNS} in all at most, and "
                                "--threads 1 or more")
    library = read_library(bundle)
    source_model = _peer_source(library.folder, device, compare, source)
    target = open_device(device, identity)
    facts = target.facts()
    oracle = Session(library.folder, providers=["reference"])
    given = dict(feeds or {})
    check_names(given, [s.name for s in oracle.inputs], require_all=False)
    generated = sample_feeds([s for s in oracle.inputs if s.name not in given], seed,
                             {**dims_of(oracle.inputs, given), **(dims or {})})
    chosen = {s.name: given[s.name] if s.name in given else generated[s.name] for s in oracle.inputs}
    try:
        expected = oracle.run(chosen)
    except EdgepackError:
        raise
    except Exception as error:  # noqa: BLE001  (the model itself rejects these inputs)
        raise EdgepackError(f"the bundle's graph fails on these inputs on reference: {type(error).__name__}: "
                            f"{error}", where=str(bundle),
                            fix="give real inputs with --input NAME=FILE.npy (silero-vad's sr must be 8000 or 16000)"
                            ) from error
    with tempfile.TemporaryDirectory(prefix="edgepack-bench-") as tmp:
        local = Path(tmp)
        native = _native(facts)
        march = _march(target, facts) if native else None
        binary = cached_example(library, native=native, march=march, threads=threads > 1)
        ops_runs = min(runs, OPS_RUNS)
        printed, outputs, profiled = _run_there(target, library, binary,
                                                _profile_runner(native, march) if profile_ops else None, chosen,
                                                runs + warmup, ops_runs, local, threads)
    ops = parse(profiled, device, facts.emulated, ops_runs) if profiled is not None else None
    times = [float(t) for t in _field(printed, "run_ms", device).split()]
    checks = [check_output(name, np.asarray(value), outputs[name]) for name, value in expected.items()]
    peak_kb = float(_field(printed, "peak_rss_kb", device))
    result = result_dict(
        engine=f"edgepack C library example, {thread_count(threads)}", spec=target.spec, facts=facts,
        bundle=library.folder,
        load_ms=float(_field(printed, "load_ms", device)), times=times, warmup=warmup,
        peak_rss_mb=peak_kb / 1024 if peak_kb >= 0 else None,
        inputs=[{"name": n, "dtype": v.dtype.name, "shape": list(v.shape),
                 "from": "file" if n in given else "generated"} for n, v in chosen.items()],
        checks=checks, ops=ops)
    if source_model is not None:
        from .bench_peers import peer_result

        result["peers"] = [peer_result(peer, source_model, chosen, result, target, facts, threads)
                           for peer in compare]
    return result


def _peer_source(bundle: Path, device: str, compare: Sequence[str], source: str | Path | None) -> Path | None:
    """The source model the peers run, when there are peers: they run in this process, so only on `host`."""
    from .bench_peers import PEERS

    if not compare:
        if source is not None:
            raise EdgepackError("--source is only used with --compare", where="--source",
                                fix="add --compare onnxruntime or openvino, or leave --source out")
        return None
    unknown = [peer for peer in compare if peer not in PEERS]
    if unknown:
        raise EdgepackError(f"cannot compare a device bench with {', '.join(unknown)}", where="--compare",
                            fix=f"compare with {' or '.join(PEERS)} (onnxruntime-web: a web bundle, --device chromium)")
    if device != "host":
        raise EdgepackError(f"--compare runs {', '.join(compare)} in this process, on this host, not on {device}",
                            where="--compare", fix="bench with --device host to compare, or leave --compare out")
    return peer_model_path(bundle, source)


def _native(facts: DeviceFacts) -> bool:
    """Whether the example is built with this machine's compiler (the device has its architecture) rather than
    cross-compiled for aarch64."""
    if facts.arch == platform.machine():
        return True
    if facts.arch in ("aarch64", "arm64"):
        return False
    raise EdgepackError(f"the device is {facts.arch}, and this machine builds the C library for "
                        f"{platform.machine()} and aarch64 only", fix="benchmark on an aarch64 or "
                        f"{platform.machine()} device, or build the bundle's Makefile on the device")


X86_LEVELS = [("x86-64-v3", {"avx2", "fma", "bmi2", "f16c", "movbe"}),
              ("x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})]
"""x86-64 levels, each needing its flags and those of the levels before it."""


def x86_levels(flags: set[str]) -> list[str]:
    """The x86-64 levels of X86_LEVELS that a CPU with these /proc/cpuinfo flags runs, lowest first."""
    allowed, needed = [], set()
    for name, needs in X86_LEVELS:
        needed |= needs
        if not needed <= flags:
            break
        allowed.append(name)
    return allowed


def _march(device: Device, facts: DeviceFacts) -> str | None:
    """The CPU to build the example for: this one (`native`) on the host; on another x86-64 machine, the highest
    x86-64 level its /proc/cpuinfo flags allow; else the architecture's baseline (None; ARM64's includes NEON)."""
    if device.spec == "host":
        return "native"
    if facts.arch != "x86_64":
        return None
    proc = device.run(["cat", "/proc/cpuinfo"])
    line = next((line for line in proc.stdout.splitlines() if line.startswith("flags")), "")
    allowed = x86_levels(set(line.partition(":")[2].split()))
    return allowed[-1] if allowed else None


def _profile_runner(native: bool, march: str | None) -> Path:
    """The profiling `ep_run` for the device, built for the CPU the example was built for."""
    from edgepack.runtime.native.build import aarch64_runner, device_profile_runner

    return device_profile_runner(march) if native else aarch64_runner(profile=True)


def _run_there(device: Device, library: Any, binary: Path, profiler: Path | None, feeds: dict[str, np.ndarray],
               repeat: int, profile_runs: int, local: Path, threads: int
               ) -> tuple[str, dict[str, np.ndarray], str | None]:
    """Pushes the example, the plan and the inputs, runs `repeat` times on `threads` threads, pulls the outputs;
    then, given the `profiler` (the profiling ep_run), runs it `profile_runs` times on the same plan, inputs and
    threads and returns what it printed (the per-op times) too."""
    from edgepack.targets.embedded.example_run import output_file

    with device.workspace() as folder:
        device.push(binary, f"{folder}/example")
        device.push(library.plan, f"{folder}/plan.epk")
        inputs = []
        for index, name in enumerate(library.inputs):
            path = local / f"in{index}.npy"
            np.save(path, np.asarray(feeds[name]))
            inputs.append(f"{folder}/in{index}.npy")
            device.push(path, inputs[-1])
        threading = ["--threads", str(threads)] if threads > 1 else []
        proc = device.run([f"{folder}/example", f"{folder}/plan.epk", folder, "--repeat", str(repeat), *threading,
                           *inputs])
        if proc.returncode != 0:
            raise EdgepackError(f"the example failed on {device.spec}: {(proc.stderr or proc.stdout).strip()[:800]}",
                                where=device.spec, fix="check the inputs against the bundle's header")
        outputs = {}
        for name in library.outputs:
            device.pull(f"{folder}/{output_file(name)}", local / output_file(name))
            outputs[name] = np.load(local / output_file(name))
        profiled = None
        if profiler is not None:
            device.push(profiler, f"{folder}/ep_run")
            profiled = device.run([f"{folder}/ep_run", f"{folder}/plan.epk", folder, "--repeat",
                                   str(profile_runs), *threading, *inputs])
            if profiled.returncode != 0:
                raise EdgepackError(f"the profiling run failed on {device.spec}: "
                                    f"{(profiled.stderr or profiled.stdout).strip()[:800]}", where=device.spec,
                                    fix="bench with --no-ops to leave out the per-op times")
    return proc.stdout, outputs, profiled.stdout if profiled else None


def _field(printed: str, key: str, device: str) -> str:
    match = re.search(rf"^{key} (.*)$", printed, re.MULTILINE)
    if not match:
        raise EdgepackError(f"the example on {device} printed no {key}", where=device,
                            fix="rebuild the bundle with this edgepack version")
    return match.group(1)
