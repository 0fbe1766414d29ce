"""The verify stage: run the bundle next to the fp32 source on `reference`, on the same sample inputs, and measure
per output max abs diff, cosine similarity and top-1 agreement."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from edgepack.packager.profile import Profile
from edgepack.runtime.errors import EdgepackError
from edgepack.targets import ShippedRuntime

from .input_files import load_array
from .sample_inputs import INTEGER_HIGH, integer_limits, sample_feeds

REFERENCE = "reference provider on the fp32 source"
SEEDS = (0, 1)
"""Seeds of the generated sample inputs when the user gives none."""
NEGLIGIBLE_DIFF = 1e-5
"""An output whose max abs diff is at most this, relative to its scale (its largest magnitude, at least 1), passes
whatever its cosine: the cosine of outputs near zero (a detector's map on a blank input) measures rounding noise."""
SMOKE_SECONDS = 30
"""How long the emulated smoke run of a bundle may take: a plan is verified on the host build of the core, and run
under emulation once, on the first sample, to check the device build gives the same outputs."""
SMOKE_TOLERANCE = 1e-4
"""Largest max abs diff between the emulated and the host run, relative to the output's scale (at least 1)."""


def load_sample_inputs(folder: str | Path, input_names: Sequence[str]) -> list[dict[str, np.ndarray]]:
    """Samples from a folder: each `.npz` is one sample (arrays named after the inputs); `<input>.npy` files make
    one more sample together."""
    folder = Path(folder)
    if not folder.is_dir():
        raise EdgepackError(f"sample inputs folder {str(folder)!r} does not exist", where=str(folder),
                            fix="give --sample-inputs a folder of .npz files (one sample each) or <input>.npy files")
    samples = []
    for path in sorted(folder.glob("*.npz")):
        with np.load(path) as archive:
            samples.append({name: archive[name] for name in archive.files})
    loose = {path.stem: load_array(path.stem, path) for path in sorted(folder.glob("*.npy"))}
    if loose:
        samples.append(loose)
    if not samples:
        raise EdgepackError(f"no .npz or .npy files in {str(folder)!r}", where=str(folder),
                            fix="save one sample per .npz file (np.savez(path, **{input_name: array}))")
    for index, sample in enumerate(samples):
        unknown = sorted(set(sample) - set(input_names))
        missing = sorted(set(input_names) - set(sample))
        if unknown or missing:
            raise EdgepackError(f"sample {index} in {str(folder)!r} does not match the model's inputs: missing "
                                f"{missing or 'none'}, unknown {unknown or 'none'}", where=str(folder),
                                fix=f"give arrays named exactly {list(input_names)}")
    return samples


def compare(expected: np.ndarray, actual: np.ndarray) -> dict[str, float | None]:
    """Max abs diff, cosine similarity, (for scores on a last axis) top-1 agreement of two arrays, and the scale of
    the expected one (its largest finite magnitude)."""
    a = np.asarray(expected, dtype=np.float64).ravel()
    scale = float(np.max(np.abs(a[np.isfinite(a)]), initial=0.0))
    if expected.shape != actual.shape:
        return {"max_abs_diff": float("inf"), "cosine": 0.0, "top1_agreement": 0.0, "scale": scale}
    b = np.asarray(actual, dtype=np.float64).ravel()
    if a.size == 0:
        return {"max_abs_diff": 0.0, "cosine": 1.0, "top1_agreement": None, "scale": scale}
    finite = np.isfinite(a) & np.isfinite(b)
    same_nonfinite = bool(np.array_equal(a[~finite], b[~finite], equal_nan=True))
    diff = float(np.max(np.abs(a[finite] - b[finite]))) if finite.any() else 0.0
    norms = float(np.linalg.norm(a[finite]) * np.linalg.norm(b[finite]))
    cosine = float(np.dot(a[finite], b[finite]) / norms) if norms > 0 else float(np.array_equal(a, b, equal_nan=True))
    if not same_nonfinite:
        diff, cosine = float("inf"), 0.0
    top1 = None
    if expected.ndim >= 1 and expected.shape[-1] > 1 and np.issubdtype(expected.dtype, np.floating):
        top1 = float(np.mean(np.argmax(expected, axis=-1) == np.argmax(actual, axis=-1)))
    return {"max_abs_diff": diff, "cosine": cosine, "top1_agreement": top1, "scale": scale}


SampleInputs = str | Path | Sequence[dict[str, np.ndarray]] | None
"""A folder of .npz/.npy files, or (Python API) a list of feeds dicts, or None for generated inputs."""


@dataclass(frozen=True)
class Oracle:
    """The sample inputs and the fp32 source's outputs on them, computed once per build."""

    samples: list[dict[str, np.ndarray]]
    expected: list[dict[str, np.ndarray]]
    origin: str
    name: str = REFERENCE
    """Which executor computed `expected`, and why when it is not `reference`."""
    floor: dict[str, float] = field(default_factory=dict)
    """Per output, the worst cosine between `reference` and onnxruntime on the fp32 source where they disagree: two
    correct executors part that far (rounding a quantized graph amplifies), so a bundle's tolerance widens by it."""


def run_oracle(source: onnx.ModelProto, sample_inputs: SampleInputs = None,
               dims: dict[str, int] | None = None, origin: str | None = None, run: bool = True,
               first_only: bool = False, weights: Path | None = None) -> Oracle:
    """Run the fp32 source on `reference` over the sample inputs (the user's, or generated from the inputs);
    `origin` says where a list of feeds came from. `first_only` keeps the first sample; without `run` the outputs are
    not computed (`expected` is empty). `weights`: the folder of the source's external initializers."""
    from edgepack.runtime import Session

    oracle = Session(source, providers=["reference"], weights=weights)
    if isinstance(sample_inputs, (str, Path)):
        samples = load_sample_inputs(sample_inputs, [spec.name for spec in oracle.inputs])
        origin = str(sample_inputs)
    elif sample_inputs is not None:
        samples, origin = [dict(feeds) for feeds in sample_inputs], origin or "given by the caller"
    else:
        limits = integer_limits(source)
        samples = [sample_feeds(oracle.inputs, seed=seed, dims=dims, limits=limits) for seed in SEEDS]
        bounded = "".join(f", {name} in [0, {high})" for name, high in limits.items() if high < INTEGER_HIGH)
        origin = (f"generated (seeds {', '.join(map(str, SEEDS))}; floats in [-1, 1], integers in "
                  f"[0, {INTEGER_HIGH}){bounded})")
    samples = samples[:1] if first_only else samples
    if not run:
        return Oracle(samples, [], origin)
    expected: list[dict[str, np.ndarray]] = []
    failure: EdgepackError | None = None
    for index, feeds in enumerate(samples):
        try:
            expected.append(oracle.run(feeds))
        except EdgepackError:
            raise
        except Exception as error:  # noqa: BLE001  (the source model itself rejects these inputs)
            failure = EdgepackError(
                f"the source model fails on sample input {index} ({origin}): {type(error).__name__}: {error}",
                where="verify stage", fix="give real inputs with --sample-inputs DIR, or pin the input shapes "
                                          "with --input-shape NAME=1,3,224,224")
            failure.__cause__ = error
            break
    return _checked_by_onnxruntime(source, Oracle(samples, expected, origin), failure, weights)


def _checked_by_onnxruntime(source: onnx.ModelProto, oracle: Oracle, failure: EdgepackError | None,
                            weights: Path | None) -> Oracle:
    """The oracle as `reference` computed it, where onnxruntime agrees or is not installed; else onnxruntime's
    outputs, named as such, with where `reference` failed or parted from it."""
    from . import oracle_check

    if not oracle_check.available():
        if failure:
            raise failure
        return oracle
    try:
        runtime = oracle_check.onnxruntime_run(source, weights=weights)
        theirs = [runtime(feeds) for feeds in oracle.samples]
    except Exception:  # noqa: BLE001  (onnxruntime refuses the model: the reference provider's outputs stand)
        if failure:
            raise failure from None
        return oracle
    if failure:
        reason = f"the reference provider fails on it: {failure.what}"
    else:
        found = next((d for feeds, ours, their in zip(oracle.samples, oracle.expected, theirs)
                      if (d := oracle_check.disagreement(source, feeds, ours, their))), None)
        if found is None:
            return oracle
        reason = (f"the reference provider disagrees on output {found.output!r} (max abs diff {found.relative_diff:.3g}"
                  f" of its scale), first at node {found.first_node or '(not found)'}")
    floor = {} if failure else {name: min(compare(np.asarray(ours[name]), np.asarray(their[name]))["cosine"]
                                          for ours, their in zip(oracle.expected, theirs))
                                for name in oracle.expected[0] if name in theirs[0]}
    return Oracle(oracle.samples, theirs, oracle.origin, f"onnxruntime on the fp32 source ({reason})", floor)


def measure(bundle: Path, oracle: Oracle, profile: Profile, runtime: ShippedRuntime | None = None,
            manifest: dict[str, Any] | None = None, emulate: bool = True) -> dict[str, Any]:
    """The manifest's `fidelity`: the bundle against the oracle's outputs, per output, worst case over samples; with
    `runtime`, also on the runtime the bundle ships to (`runtime`: its name, outputs, failures, or why it refused).
    `emulate=False` leaves out the run under emulation beside the host run (a candidate of mixed precision, not the
    bundle that ships)."""
    from edgepack.runtime import Session

    built = Session(bundle, full_precision=True, manifest=manifest, stand_ins=True)
    outputs = _scores(built.run, oracle)
    failures = failed_outputs(outputs, profile, oracle.floor)
    fidelity: dict[str, Any] = {"oracle": oracle.name, **({"noise_floor": oracle.floor} if oracle.floor else {}),
                                "inputs": oracle.origin,
                                "samples": len(oracle.samples), "outputs": outputs,
                                "tolerance": {"min_cosine": profile.required_cosine,
                                              "max_abs_diff": profile.max_abs_diff}}
    if built.stood_in and emulate:
        fidelity["emulation"] = _smoke_run(bundle, manifest, built, oracle.samples[0], run=not failures)
        if fidelity["emulation"]["passed"] is False:
            failures.append("the emulated run differs from the host run")
    on_runtime = _on_runtime(runtime, bundle, oracle, profile) if runtime and runtime.open_bundle else None
    if on_runtime is not None:
        fidelity["runtime"] = on_runtime
        failures += [f"{name} on {on_runtime['name']}" for name in on_runtime.get("failed_outputs", [])]
    fidelity.update(passed=not failures, failed_outputs=failures)
    return fidelity


def _smoke_run(bundle: Path, manifest: dict[str, Any] | None, host: Any, feeds: dict[str, np.ndarray],
               run: bool) -> dict[str, Any]:
    """The bundle as it ships (its emulated partitions under emulation) on one sample, beside the host run that
    verified it; stopped after SMOKE_SECONDS (`passed` is then None: not checked). Without `run` (the host run is
    below tolerance already, and mixed precision may try again) it is left out."""

    from edgepack.runtime import Session
    from edgepack.runtime.native.emulated import EmulationTimeout
    from edgepack.runtime.providers import PROVIDERS

    from .oracle_check import relative_diff

    emulated = sorted({p.info["provider"] for p in host.partitions if p.info["id"] in host.stood_in})
    record: dict[str, Any] = {"verified_on": sorted({PROVIDERS[p].host_stand_in for p in emulated}),
                              "emulated": emulated, "samples": 1, "passed": None}
    if not run:
        return {**record, "not_run": "the host run is below tolerance"}
    missing = [f"{p}: {PROVIDERS[p].missing()}" for p in emulated if PROVIDERS[p].missing()]
    if missing:
        return {**record, "not_run": "; ".join(missing)}
    try:
        actual = Session(bundle, full_precision=True, manifest=manifest,
                         provider_options={p: {"timeout_s": SMOKE_SECONDS} for p in emulated}).run(feeds)
    except EmulationTimeout:
        return {**record, "not_run": f"stopped after {SMOKE_SECONDS} s under emulation"}
    expected = host.run(feeds)
    worst = max((relative_diff(value, actual[name]) for name, value in expected.items()), default=0.0)
    return {**record, "relative_max_abs_diff": worst, "passed": worst <= SMOKE_TOLERANCE}


def _scores(run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]], oracle: Oracle
            ) -> dict[str, dict[str, float | None]]:
    outputs: dict[str, dict[str, float | None]] = {}
    agreements: dict[str, list[float]] = {}
    for feeds, expected in zip(oracle.samples, oracle.expected):
        actual = run(feeds)
        for name, value in expected.items():
            metrics = compare(np.asarray(value), np.asarray(actual[name]))
            if metrics["top1_agreement"] is not None:
                agreements.setdefault(name, []).append(metrics["top1_agreement"])
            _fold(outputs.setdefault(name, {}), metrics)
    for name, values in agreements.items():
        outputs[name]["top1_agreement"] = float(np.mean(values))
    return outputs


def failed_outputs(outputs: dict[str, dict[str, float | None]], profile: Profile,
                   floor: dict[str, float] | None = None) -> list[str]:
    """The outputs below the profile's cosine (less what the two executors disagree by, `Oracle.floor`) by more
    than a negligible diff, or over its max abs diff."""
    floor = floor or {}
    return [name for name, m in outputs.items()
            if (m["cosine"] < profile.required_cosine - (1 - floor.get(name, 1.0))
                and m["max_abs_diff"] > NEGLIGIBLE_DIFF * max(1.0, m["scale"]))
            or (profile.max_abs_diff is not None and m["max_abs_diff"] > profile.max_abs_diff)]


def _on_runtime(runtime: ShippedRuntime, bundle: Path, oracle: Oracle, profile: Profile) -> dict[str, Any] | None:
    """The bundle's scores on its runtime, None where that runtime is not installed, or why the runtime refused it
    (a refusal is reported, not failed: the providers verified the bundle, and other runtimes may take it)."""
    opened = runtime.open_bundle(bundle)
    if opened is None:
        return None
    name, open_session = opened
    try:
        outputs = _scores(open_session(), oracle)
    except Exception as error:  # noqa: BLE001  (the runtime's own refusal, whatever its type)
        lines = str(error).strip().splitlines()
        return {"name": name, "refused": f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]}
    return {"name": name, "outputs": outputs, "failed_outputs": failed_outputs(outputs, profile, oracle.floor)}


def _fold(total: dict[str, float | None], metrics: dict[str, float | None]) -> None:
    """Worst case over samples: largest diff, smallest cosine (top-1 agreement is averaged by the caller)."""
    for key, value in metrics.items():
        if key not in total:
            total[key] = value
        elif value is not None and total[key] is not None:
            total[key] = max(total[key], value) if key in ("max_abs_diff", "scale") else min(total[key], value)


def fidelity_summary(fidelity: dict[str, Any]) -> str:
    """One line per output: cosine, max abs diff, top-1 agreement."""

    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.6g}"

    def scores(outputs: dict[str, dict[str, float | None]]) -> str:
        return "; ".join(f"{name}: cosine {fmt(m['cosine'])}, max abs diff {fmt(m['max_abs_diff'])}, top-1 "
                         f"{fmt(m['top1_agreement'])}" for name, m in outputs.items())

    text = scores(fidelity["outputs"])
    runtime = fidelity.get("runtime")
    if runtime is not None and "refused" in runtime:
        text += f" ({runtime['name']} refused the bundle: {runtime['refused']})"
    elif runtime is not None:
        text += f" (on {runtime['name']}: {scores(runtime['outputs'])})"
    emulation = fidelity.get("emulation")
    if emulation is not None:
        text += (f" (verified on {', '.join(emulation['verified_on'])}; {', '.join(emulation['emulated'])} under "
                 "emulation on 1 sample: " + (f"not run, {emulation['not_run']}" if "not_run" in emulation else
                                              f"relative max abs diff {fmt(emulation['relative_max_abs_diff'])}")
                 + ")")
    return text
