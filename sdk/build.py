"""`edgepack.build`: load -> slim -> quantize -> oracle -> partition -> lower -> bundle -> verify, each stage a
function over one `BuildState` that returns its summary line (the CLI reports them). Mixed precision is an explicit
loop over the package stages; each artefact is made once, by the lower stage; the manifest is assembled once, at
the end."""

from __future__ import annotations

import copy
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import onnx

from edgepack.packager.contrib import decompose_contrib_ops
from edgepack.packager.flops import model_flops
from edgepack.packager.graphs import count_nodes
from edgepack.packager.lower import FIXED_SHAPE_FORMS, Lowered, Lowerer, pinned_shapes
from edgepack.packager.partition import Partition, partition, whole
from edgepack.packager.profile import Profile
from edgepack.packager.quantize import Calibration, QuantizeResult, quantize
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.model_file import SourceModel, load_model, resolve_model_path, with_weights_read
from edgepack.targets import TARGETS, BundleInput, Target

from .build_checks import bundle_name, check_options, excluded_nodes, opset_range
from .build_manifest import assemble_manifest, bundle_ports, quantize_summary, slower_compute
from .bundle_writer import bundle_lock, check_output_folder, refuse_existing, staged_bundle
from .calibration_inputs import CalibrationSource, load_calibration
from .input_shapes import pin_shapes, pins_refused
from .manifest import write_manifest
from .mixed_precision import doubling, sensitivity_order
from .model_check import (
    check_model,
    declared_shapes_contradicted,
    infer_shapes,
    initializers_as_constants,
    non_finite_weights,
    without_output_shapes,
)
from .model_runner import model_inputs, profile_runner
from .opset import convert_opset
from .per_node import per_node, per_node_summary
from .profile import load_profile
from .report import BuildReport, Reporter, SilentReporter, StageRecord
from .sample_inputs import integer_limits, sample_feeds
from .shared_work import SharedWork, digest
from .tune import SpeedChoice, choose_int8_compute
from .verify import Oracle, SampleInputs, fidelity_summary, measure, run_oracle

VERIFY_CALIBRATION_SAMPLES = 4
"""Without --sample-inputs, a calibrated build is verified on this many of its calibration samples (real data the
user gave) rather than on random inputs, which int8 ranges were not measured on."""


@dataclass(frozen=True)
class BuildResult:
    bundle_dir: Path
    manifest: dict[str, Any]
    report: BuildReport
    sample: dict[str, Any] = field(default_factory=dict)
    """The first sample input the build ran the bundle on (feeds by input name)."""


@dataclass(frozen=True)
class BuildOptions:
    """What the caller asked for, beside the model and the profile."""

    input_shapes: dict[str, tuple[int, ...]]
    sample_inputs: SampleInputs
    accept_fidelity_loss: bool
    exclude_ops: Sequence[str]
    exclude_nodes: Sequence[str]
    calibration: CalibrationSource | None
    calibration_method: str
    tune: bool
    verify: bool
    per_node: bool


@dataclass
class BuildState:
    """Everything the stages make, in the order they make it."""

    model_path: Path
    profile: Profile
    options: BuildOptions
    report: BuildReport
    staging: Path | None = None
    """The folder the bundle is written into, renamed into place when the build succeeds."""
    source: SourceModel | None = None
    checked: onnx.ModelProto | None = None
    """The source after checks, shape pins and opset conversion: the fp32 model every output is compared with."""
    pins: list[str] = field(default_factory=list)
    conversion: str | None = None
    samples: list[dict[str, Any]] | None = None
    """Calibration samples (None without --calibration)."""
    slimmed: onnx.ModelProto | None = None
    calibration: Calibration | None = None
    excluded: frozenset[str] = frozenset()
    speed: SpeedChoice = SpeedChoice(frozenset(), None, None, None)
    compute: str = "fp32"
    """The activation precision the bundle computes in (int8 is left out where it is not faster)."""
    kept: list[str] = field(default_factory=list)
    """Nodes kept in fp32 for fidelity by mixed precision."""
    searching: bool = False
    """Mixed precision is trying candidates: verify leaves out the run under emulation until the one that ships."""
    quantized: QuantizeResult | None = None
    oracle: Oracle | None = None
    lowerer: Lowerer | None = None
    partitions: list[Partition] = field(default_factory=list)
    lowered: list[Lowered] = field(default_factory=list)
    fidelity: dict[str, Any] | None = None
    shared: SharedWork = field(default_factory=SharedWork)
    """Slim and oracle work shared with the other profiles of a multi-profile build."""

    @property
    def target(self) -> Target:
        return TARGETS[self.profile.target]

    def requantize(self, keep: frozenset[str]) -> QuantizeResult:
        """The slimmed model quantized as the profile asks, with the nodes in `keep` left in float."""
        if self.target.applies_precision:
            return quantize(self.slimmed, "fp32", keep, "fp32", self.calibration)
        return quantize(self.slimmed, self.profile.weights, keep, self.compute, self.calibration)

    @property
    def kept_in_float(self) -> frozenset[str]:
        """Every node the quantize stage leaves in float: excluded by the user, slower in int8, or kept for fidelity."""
        slower = self.speed.slower if self.compute == "int8" else frozenset()
        return self.excluded | slower | frozenset(self.kept)


Stage = Callable[["BuildState", Reporter], str]
"""A stage: it updates the state and returns its one-line summary."""


def build(
    model: str | Path,
    profile: str | Path | Profile = "generic",
    output_dir: str | Path = "dist",
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    force: bool = False,
    reporter: Reporter | None = None,
    sample_inputs: SampleInputs = None,
    accept_fidelity_loss: bool = False,
    weights: str | None = None,
    activations: str | None = None,
    exclude_ops: Sequence[str] = (),
    exclude_nodes: Sequence[str] = (),
    calibration: CalibrationSource | None = None,
    calibration_method: str = "minmax",
    tune: bool = False,
    verify: bool = True,
    dims: dict[str, int] | None = None,
    per_node: bool = False,
    shared: SharedWork | None = None,
) -> BuildResult:
    """Build a bundle of `model` for `profile` into `output_dir/<model>-<profile>`. `weights` and `activations`
    override the profile's precision; `exclude_ops` (op types) and `exclude_nodes` (node names) stay in fp32.
    `calibration` (a folder of .npz/.npy samples, or feeds dicts) makes int8 activations static. `tune` times int8
    against fp32 per op class on the target's runtime instead of reading the measured table. `verify=False` skips
    the verify stage (the manifest's `fidelity` is then null): for tests of a bundle's structure. `dims` (dim name
    -> size) pins symbolic dims over the profile's own pins. `per_node` compares every value of the bundle
    with the fp32 source's and names the first that drifts (`report.per_node`). `shared` carries slim and oracle
    work between the builds of one model for several profiles (`edgepack.portability.build_all`)."""
    profile = check_options(profile if isinstance(profile, Profile) else load_profile(profile), weights, activations,
                            calibration, calibration_method)
    if dims:
        profile = replace(profile, dims={**profile.dims, **dims})
    model_path = resolve_model_path(model)
    final = Path(output_dir) / bundle_name(model_path, profile)
    refuse_existing(final, force)
    check_output_folder(final.parent)
    options = BuildOptions(input_shapes or {}, sample_inputs, accept_fidelity_loss, exclude_ops, exclude_nodes,
                           calibration, calibration_method, tune, verify, per_node)
    state = BuildState(model_path, profile, options, BuildReport(str(model_path), profile.name, profile.target,
                                                                 str(final)), shared=shared or SharedWork())
    progress = reporter or SilentReporter()
    with bundle_lock(final):
        for stage in (load_stage, slim_stage, quantize_stage, oracle_stage):
            run_stage(stage, state, progress)
        manifest = package(state, progress, final, force)
    return BuildResult(final, manifest, state.report, state.oracle.samples[0])


def package(state: BuildState, progress: Reporter, final: Path, force: bool) -> dict[str, Any]:
    """The packaging stages in a staging folder that replaces `final` once the manifest is written; returns it."""
    state.lowerer = Lowerer(state.profile, state.target.forms, state.target.product)
    try:
        with staged_bundle(final, force) as state.staging:
            for stage in PACKAGE_STAGES:
                run_stage(stage, state, progress)
            if needs_mixed_precision(state):
                run_stage(mixed_precision_stage, state, progress)
            if needs_full_precision(state):
                run_stage(full_precision_stage, state, progress)
            if warning := few_samples_warning(state):
                state.report.warnings.append(warning)
            if state.options.per_node and state.options.verify:
                run_stage(per_node_stage, state, progress)
            manifest = assemble_manifest(state)
            write_manifest(state.staging, manifest)
            refuse_fidelity_loss(state)
    finally:
        state.lowerer.close()
    return manifest


def run_stage(stage: Stage, state: BuildState, progress: Reporter) -> None:
    """Run one stage, timed and reported under its name (the function's, less `_stage`)."""
    name = stage.__name__.removesuffix("_stage").replace("_", " ")
    progress.start(name)
    start = time.perf_counter()
    try:
        summary = stage(state, progress)
    except BaseException:
        progress.fail(name)
        raise
    seconds = time.perf_counter() - start
    state.report.stages.append(StageRecord(name, seconds, summary))
    progress.finish(name, seconds, summary)


def load_stage(state: BuildState, progress: Reporter) -> str:
    """Read and check the model, pin shapes, convert its opset into the profile's range, read calibration."""
    profile, report = state.profile, state.report
    state.source = load_model(state.model_path, map_weights=True)
    if not state.target.maps_weights:
        state.source = with_weights_read(state.source, f"the {state.target.name} target")
    standard, report.decomposed = decompose_contrib_ops(state.source.model)
    checked = check_model(standard, state.model_path.name)
    declared = [copy.deepcopy(info.type) for info in checked.graph.input]
    state.pins = pin_shapes(checked, {**profile.input_shapes, **state.options.input_shapes}, profile.dims)
    if state.pins:
        pinned = infer_shapes(checked, state.model_path.name)
        for info, kind in zip(checked.graph.input, declared):  # `checked` unpinned again: what a refusal keeps
            info.type.CopyFrom(kind)
        refusal = pins_refused(state.target.runtime, pinned, checked)
        if refusal:
            report.warnings.append(f"{state.target.runtime.name} refuses the model with the pinned dims "
                                   f"({' '.join(state.pins)}): {refusal}; the bundle keeps the model's own dims")
            state.pins = []
        checked = checked if refusal else pinned
    converted, state.conversion = convert_opset(checked, *opset_range(profile))
    state.checked, constants = initializers_as_constants(converted)
    if all(state.target.forms.get(provider) in FIXED_SHAPE_FORMS for provider in profile.providers):
        pinned_shapes(state.checked, state.target.product)
    report.source_nodes, report.source_bytes = count_nodes(state.source.model), state.source.bytes
    report.source_ops = sorted({node.op_type for node in state.source.model.graph.node})
    non_finite = non_finite_weights(checked)
    if non_finite:
        report.warnings.append(f"weights hold NaN or Inf: {', '.join(non_finite[:5])}"
                               + (f" and {len(non_finite) - 5} more" if len(non_finite) > 5 else "")
                               + "; the bundle computes with them as the source does")
    if state.options.calibration is not None:
        state.samples = load_calibration(state.options.calibration, model_inputs(state.checked))
    return (f"{report.source_nodes} nodes" + (f", pinned {' '.join(state.pins)}" if state.pins else "")
            + (f", decomposed {', '.join(report.decomposed)}" if report.decomposed else "")
            + (f", {constants} weights listed as inputs kept as constants" if constants else "")
            + (f", {state.conversion}" if state.conversion else "")
            + ("; warning: weights hold NaN or Inf" if non_finite else ""))


def slim_stage(state: BuildState, progress: Reporter) -> str:
    state.slimmed, state.report.passes, shared = state.shared.slim(state.checked, progress.update,
                                                                   state.source.weights)
    state.report.slim_nodes = count_nodes(state.slimmed)
    skipped = [p.name for p in state.report.passes if p.status != "ok"]
    return (f"{state.report.source_nodes} -> {state.report.slim_nodes} nodes"
            + (f" (skipped {', '.join(skipped)})" if skipped else "") + (" (shared)" if shared else ""))


def quantize_stage(state: BuildState, progress: Reporter) -> str:
    """Quantize as the profile asks, leaving out int8 compute where the target's runtime does not run it faster."""
    profile, options = state.profile, state.options
    if state.samples is not None:
        state.calibration = Calibration(state.samples, profile_runner(profile), options.calibration_method)
    state.compute = profile.activations
    state.quantized = state.requantize(frozenset())
    state.excluded = excluded_nodes(state.quantized.model, options.exclude_ops, options.exclude_nodes) \
        & set(state.quantized.nodes)
    if profile.activations == "int8":
        progress.update("timing int8 against fp32" + (" per op class (--tune)" if options.tune else ""))
        feeds = state.samples[0] if state.samples else sample_feeds(model_inputs(state.checked), dims=profile.dims,
                                                                   limits=integer_limits(state.checked))
        form = "dynamic" if state.samples is None else "static"
        state.speed = choose_int8_compute(state.slimmed, state.quantized, state.requantize, state.excluded,
                                          state.target.runtime, form, feeds, options.tune)
        if state.speed.fp32_compute:
            state.compute = "fp32"
            state.quantized = state.requantize(frozenset())
    if state.kept_in_float:
        state.quantized = state.requantize(state.kept_in_float)
    slower = state.kept_in_float - state.excluded
    return (quantize_summary(state) + (f", {len(state.excluded)} excluded" if state.excluded else "")
            + (f", {len(slower)} kept fp32 where int8 is slower" if slower else "")
            + (f", {slower_compute(state.speed)}: fp32 compute" if state.compute != profile.activations else ""))


def oracle_stage(state: BuildState, progress: Reporter) -> str:
    """The sample inputs and the fp32 source's outputs on them. Without verify only the first sample is kept, and
    the source is run on it only for a target that ships its outputs (the Swift package's test)."""
    options = state.options
    samples, origin = options.sample_inputs, None
    if samples is None and state.samples is not None:
        count = min(len(state.samples), VERIFY_CALIBRATION_SAMPLES)
        samples, origin = state.samples[:count], f"the first {count} calibration samples"
    run = options.verify or state.target.ships_expected
    dims = state.profile.dims
    state.oracle, shared = state.shared.oracle(
        state.checked, (tuple(sorted(dims.items())), run, not options.verify),
        lambda: run_oracle(state.checked, samples, dims, origin, run=run, first_only=not options.verify,
                           weights=state.source.weights))
    if not run:
        return f"not run (verify=False), example input: {state.oracle.origin}"
    wrong = declared_shapes_contradicted(state.checked, state.oracle.expected)
    if wrong:
        state.checked = without_output_shapes(state.checked, wrong)
        slim_stage(state, progress)
        quantize_stage(state, progress)
    return (f"{state.oracle.name}, {len(state.oracle.samples)} sample(s): {state.oracle.origin}"
            + (" (shared)" if shared else "")
            + "".join(f"; the model declares output {name!r} as {declared} but computes {actual}: the declared "
                      f"shape is wrong, so it was dropped and the model slimmed again" for name, (declared, actual)
                      in wrong.items()))


def partition_stage(state: BuildState, progress: Reporter) -> str:
    """The partitioner's plan for the profile's providers; the last one is the fallback."""
    providers = list(state.profile.providers)
    try:
        state.partitions = partition(state.quantized.model, providers, providers[-1], state.lowerer.compiles)
    except ValueError:  # a value crossing partitions has no known type: keep the model whole on the fallback
        state.partitions = [whole(state.quantized.model, providers[-1])]
    state.report.placement = [{"id": p.id, "provider": p.provider, "nodes": p.nodes,
                               **dict(zip(("flops", "flops_unknown_nodes"), model_flops(p.model)))}
                              for p in state.partitions]
    return ", ".join(f"{p.id} {p.provider} ({p.nodes} nodes)" for p in state.partitions)


def lower_stage(state: BuildState, progress: Reporter) -> str:
    """Each partition in the form its target ships it: ONNX, an `.epk` plan, OpenVINO IR or a CoreML package."""
    state.lowered = state.lowerer.lower(state.quantized.model, state.partitions)
    state.report.warnings += [f"{low.partition.id}: {low.note}" for low in state.lowered if low.note]
    return ", ".join(f"{low.partition.id} {low.form}" for low in state.lowered)


def bundle_stage(state: BuildState, progress: Reporter) -> str:
    """Write the target's artefacts into the staging folder, replacing what an earlier attempt wrote."""
    for leftover in state.staging.iterdir():
        leftover.unlink() if leftover.is_file() else shutil.rmtree(leftover)
    bundle_input = BundleInput(state.quantized.model, bundle_name(state.model_path, state.profile), state.profile,
                               state.lowered, state.oracle.samples[0],
                               state.oracle.expected[0] if state.oracle.expected else None, trial=state.searching,
                               weights=state.source.weights)
    state.report.partitions = state.target.write(bundle_input, state.staging)
    state.report.bundle_bytes = sum(p.stat().st_size for p in state.staging.rglob("*") if p.is_file())
    return f"{len(state.report.partitions)} partition(s), {state.report.bundle_bytes:,} bytes"


def verify_stage(state: BuildState, progress: Reporter) -> str:
    """Run the bundle beside the fp32 source on the sample inputs (skipped with verify=False)."""
    if not state.options.verify:
        state.fidelity = None
        return "skipped (verify=False)"
    state.fidelity = measure(state.staging, state.oracle, state.profile, state.target.runtime, bundle_ports(state),
                             emulate=not state.searching)
    return fidelity_summary(state.fidelity)


PACKAGE_STAGES = (partition_stage, lower_stage, bundle_stage, verify_stage)
"""The stages that make the bundle from the quantized model, run again by each mixed-precision attempt."""


MARGIN = 0.7
"""A quantized build keeps this share of the tolerance's allowance (1 - min cosine) unused on its samples: a bundle
that just passes on the samples it was checked on (and calibrated on) falls below on inputs it never saw."""
FEW_SAMPLES = 4
"""Below this many verification samples the worst case seen is a poor guide to inputs never seen: basic-pitch's int8
bundle used 21% of the allowance on two noise clips and 120% on a third."""
MARGIN_FEW_SAMPLES = 0.8
"""The share kept unused when the build is verified on fewer than FEW_SAMPLES samples."""


def margin(state: BuildState) -> float:
    return MARGIN if len(state.oracle.samples) >= FEW_SAMPLES else MARGIN_FEW_SAMPLES


def within_margin(state: BuildState) -> bool:
    """Passed, with every output's cosine at least 1 - (1 - margin) * (1 - the profile's min cosine)."""
    fidelity = state.fidelity
    floor = 1 - (1 - margin(state)) * (1 - state.profile.required_cosine)
    noise = state.oracle.floor
    return fidelity["passed"] and all(m["cosine"] >= floor - (1 - noise.get(name, 1.0))
                                      for name, m in fidelity["outputs"].items())


def few_samples_warning(state: BuildState) -> str | None:
    """What to give when a bundle with lowered precision was verified on fewer than FEW_SAMPLES samples."""
    count = len(state.oracle.samples)
    if state.fidelity is None or count >= FEW_SAMPLES or not state.quantized.nodes:
        return None
    return (f"fidelity was measured on {count} sample input(s), too few for its worst case to stand for inputs the "
            f"build never saw, so quantization kept {MARGIN_FEW_SAMPLES:.0%} of the tolerance unused; give "
            f"{FEW_SAMPLES} or more real inputs with --sample-inputs for a figure that means more")


def needs_mixed_precision(state: BuildState) -> bool:
    return (state.fidelity is not None and not within_margin(state) and bool(state.quantized.nodes)
            and not state.options.accept_fidelity_loss)


def mixed_precision_stage(state: BuildState, progress: Reporter) -> str:
    """Keep the most sensitive quantized nodes in fp32, doubling how many, until the tolerance holds with its
    margin. A profile that quantized the same graph alike and verifies it on the same providers as one built before
    in this run starts from the nodes that one kept. Candidates are written as trials (no compiled libraries) and
    verified on the host only; the bundle that ships is then written and verified in full (under emulation too)."""
    first = state.quantized
    key = (digest(first.model), state.profile.required_cosine, tuple(state.profile.providers))
    known = state.shared.kept.get(key)
    state.searching = True
    try:
        if known is not None:
            _package_keeping(state, known, progress)
        if known is None or not within_margin(state):
            for kept in doubling(sensitivity_order(state.slimmed, first, state.oracle, state.profile)):
                _package_keeping(state, kept, progress)
                if within_margin(state):
                    break
    finally:
        state.searching = False
    state.shared.kept[key] = state.kept
    bundle_stage(state, progress)
    verify_stage(state, progress)
    return (f"kept {len(state.kept)} of {len(first.nodes)} nodes in fp32" + (" (shared)" if state.kept is known else "")
            + f": {fidelity_summary(state.fidelity)}")


def _package_keeping(state: BuildState, kept: list[str], progress: Reporter) -> None:
    """The bundle made again with the nodes in `kept` left in fp32, and verified."""
    state.kept = kept
    state.quantized = state.requantize(state.kept_in_float)
    for stage in PACKAGE_STAGES:
        stage(state, progress)


def needs_full_precision(state: BuildState) -> bool:
    """Not within the margin where the target's own tools lower the precision (CoreML computing in fp16, OpenVINO
    compressing weights to fp16), which mixed precision cannot reach: the graph they get is fp32."""
    return (state.fidelity is not None and not within_margin(state) and state.target.applies_precision
            and (state.profile.activations != "fp32" or state.profile.weights != "fp32")
            and not state.options.accept_fidelity_loss)


def full_precision_stage(state: BuildState, progress: Reporter) -> str:
    """The bundle made again computing in fp32, then also with fp32 weights, until it is within the margin."""
    steps = [(name, value) for name, value in (("activations", state.profile.activations),
                                               ("weights", state.profile.weights)) if value != "fp32"]
    done = []
    for name, value in steps:
        state.profile = replace(state.profile, **{name: "fp32"})
        state.lowerer.close()
        state.lowerer = Lowerer(state.profile, state.target.forms, state.target.product)
        for stage in PACKAGE_STAGES:
            stage(state, progress)
        done.append(f"{name} {value} -> fp32")
        if within_margin(state):
            break
    return f"{', '.join(done)}: {fidelity_summary(state.fidelity)}"


def per_node_stage(state: BuildState, progress: Reporter) -> str:
    """Every value of the bundle beside the fp32 source's, on the first sample (`sdk/per_node.py`)."""
    state.report.per_node = per_node(state.slimmed, state.lowered, state.oracle.samples[0], state.profile)
    return per_node_summary(state.report.per_node)


def refuse_fidelity_loss(state: BuildState) -> None:
    fidelity = state.fidelity
    if fidelity is not None and not fidelity["passed"] and not state.options.accept_fidelity_loss:
        drift = f"; {per_node_summary(state.report.per_node)}" if state.report.per_node else ""
        raise EdgepackError(f"the bundle does not reach the profile's fidelity: {fidelity_summary(fidelity)}{drift}",
                            where=f"verify stage, outputs {', '.join(fidelity['failed_outputs'])}",
                            fix="pass --accept-fidelity-loss to keep it anyway, or use a profile with higher precision")
