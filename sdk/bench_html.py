"""Bench results (schema edgepack-bench/1) side by side: the ratios to the first one, as lines, and as one
self-contained HTML page with a table and SVG plots (each run's latency as a strip, p50 bars). Emulated results are
labelled in every form."""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path
from typing import Any

from edgepack.runtime.errors import EdgepackError

from .bench_result import SCHEMA
from .portability_html import (
    BAR_WIDTH,
    EMULATED_COLOUR,
    LABEL_WIDTH,
    LATENCY_COLOUR,
    ROW_HEIGHT,
    STYLE,
    bar_note,
    bar_rect,
    row_label,
    svg_figure,
)


def read_results(paths: list[Path]) -> list[dict[str, Any]]:
    """Bench result files, each checked to be of this schema."""
    results = []
    for path in paths:
        try:
            result = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise EdgepackError(f"cannot read the bench result {str(path)!r}: {error}", where=str(path),
                                fix="pass files written by `edgepack bench ... --json > FILE`") from error
        if not isinstance(result, dict) or result.get("schema") != SCHEMA:
            raise EdgepackError(f"{str(path)!r} is not a bench result of schema {SCHEMA}", where=str(path),
                                fix="pass files written by `edgepack bench BUNDLE --device ... --json`")
        results += [result, *result.get("peers", [])]
    return results


def label(result: dict[str, Any]) -> str:
    """`<profile> on <device>` (a peer: `<peer> on <device>`), with `(emulated)` where the timings are an
    emulator's."""
    emulated = " (emulated)" if result["emulated"] else ""
    what = result["engine"].split(" on the source model")[0] if " on the source model" in result["engine"] else \
        result["bundle"]["profile"]
    return f"{what} on {result['device']['spec']}{emulated}"


def ratio_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per result: its p50 and load time, and their ratios to the first result's."""
    base = results[0]
    lines = []
    for result in results:
        p50, load = result["latency_ms"]["p50"], result["load_ms"]
        lines.append(f"{label(result)}: p50 {p50:.3f} ms ({p50 / base['latency_ms']['p50']:.2f}x), load "
                     f"{load:.3f} ms ({load / base['load_ms']:.2f}x), fidelity "
                     f"{'PASS' if result['fidelity']['passed'] else 'FAIL'}")
    return lines


def render(results: list[dict[str, Any]]) -> str:
    rows = "\n".join(_row(result, results[0]) for result in results)
    header = "".join(f"<th>{name}</th>" for name in ("result", "device", "bundle", "load ms", "first run ms",
                                                       "p50 ms", "p90 ms", "p99 ms", "mean ± std ms", "p50 ratio",
                                                       "peak RSS MB", "fidelity"))
    return "\n".join([
        "<!doctype html>", "<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\">",
        "<title>edgepack bench</title>", f"<style>{STYLE}</style>", "</head><body>",
        f"<h1>edgepack bench: {len(results)} result{'s' if len(results) > 1 else ''}</h1>",
        f"<table id=\"results\"><thead><tr>{header}</tr></thead><tbody>", rows, "</tbody></table>",
        "<h2>Plots</h2>", "<div class=\"plots\">", _strip_plot(results), _p50_plot(results), "</div>",
        *_op_plots(results),
        "<p class=\"note\">Ratios are to the first result. Emulated timings (qemu) are not a device's speed. "
        "Timings on a shared machine are noisy: compare the ratios.</p>",
        "</body></html>", ""])


def _row(result: dict[str, Any], base: dict[str, Any]) -> str:
    latency, device = result["latency_ms"], result["device"]
    emulated = " <span class=\"bad\">emulated</span>" if result["emulated"] else ""
    peak = result["memory"]["peak_rss_mb"]
    cells = [escape(label(result)), f"{escape(device['cpu'])}, {device['cores']} cores, {escape(device['arch'])}"
             f"{emulated}", escape(f"{result['bundle']['profile']} ({result['bundle']['precision']['weights']} "
                                   f"weights)"),
             f"{result['load_ms']:.3f}", f"{result['first_run_ms']:.3f}", f"{latency['p50']:.3f}",
             f"{latency['p90']:.3f}", f"{latency['p99']:.3f}", f"{latency['mean']:.3f} ± {latency['std']:.3f}",
             f"{latency['p50'] / base['latency_ms']['p50']:.2f}x", "" if peak is None else f"{peak:.1f}",
             "<span class=\"ok\">PASS</span>" if result["fidelity"]["passed"] else "<span class=\"bad\">FAIL</span>"]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _strip_plot(results: list[dict[str, Any]]) -> str:
    """Each timed run as a tick on a common log axis from half the fastest run to the slowest (an emulated run is
    tens of times a native one), the p50 as a taller mark."""
    times = [t for r in results for t in r["times_ms"] if t > 0]
    low, top = min(times, default=0.5) / 2, max(times, default=1.0)
    span = math.log(top / low) or 1.0

    def at(time_ms: float) -> float:
        return LABEL_WIDTH + BAR_WIDTH * math.log(max(time_ms, low) / low) / span

    body = []
    for index, result in enumerate(results):
        body.append(row_label(index, label(result)))
        colour = EMULATED_COLOUR if result["emulated"] else LATENCY_COLOUR
        y = 20 + index * ROW_HEIGHT
        for time_ms in result["times_ms"]:
            body.append(f"<rect x=\"{at(time_ms) - 1.5:.1f}\" y=\"{y + 3}\" width=\"3\" height=\"12\" "
                        f"fill=\"{colour}\" fill-opacity=\"0.6\"/>")
        body.append(f"<rect x=\"{at(result['latency_ms']['p50']) - 2:.1f}\" y=\"{y}\" width=\"4\" height=\"18\" "
                    f"fill=\"#222\"><title>p50 {result['latency_ms']['p50']:.3f} ms</title></rect>")
    axis_y = 32 + len(results) * ROW_HEIGHT
    body.append(f"<text x=\"{LABEL_WIDTH}\" y=\"{axis_y}\" font-size=\"11\">{low:.3g} ms</text>"
                f"<text x=\"{LABEL_WIDTH + BAR_WIDTH}\" y=\"{axis_y}\" font-size=\"11\" text-anchor=\"end\">"
                f"{top:.3g} ms (log scale)</text>")
    return svg_figure("Latency of every timed run (black: p50)", "latency-distribution", body, len(results) + 1,
                      [("native", LATENCY_COLOUR), ("emulated", EMULATED_COLOUR)], [label(r) for r in results])


def _p50_plot(results: list[dict[str, Any]]) -> str:
    top = max(r["latency_ms"]["p50"] for r in results) or 1.0
    body = []
    for index, result in enumerate(results):
        p50 = result["latency_ms"]["p50"]
        body.append(row_label(index, label(result)))
        width = BAR_WIDTH * p50 / top
        body.append(bar_rect(index, 0, width, EMULATED_COLOUR if result["emulated"] else LATENCY_COLOUR,
                             f"p50 {p50:.3f} ms"))
        body.append(bar_note(index, width, f"{p50:.3g} ms"))
    return svg_figure("Median latency (p50)", "p50-plot", body, len(results),
                      [("native", LATENCY_COLOUR), ("emulated", EMULATED_COLOUR)], [label(r) for r in results])


KIND_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
"""Colours of the op kinds that take longest, in that order; the other kinds are grey."""
OTHER_KINDS_COLOUR = "#c7c7c7"
TOP_KINDS = 12


def _op_plots(results: list[dict[str, Any]]) -> list[str]:
    """Where the profiled results spend their time: per-op-kind bars for each, and the timeline of one run (every op
    in plan order, its width its time)."""
    profiled = [result for result in results if result.get("ops")]
    if not profiled:
        return []
    kinds: dict[str, float] = {}
    for result in profiled:
        for kind, ms in result["ops"]["by_kind"].items():
            kinds[kind] = kinds.get(kind, 0.0) + ms / result["ops"]["run_ms"]
    ranked = sorted(kinds, key=lambda kind: -kinds[kind])
    colours = dict(zip(ranked, KIND_COLOURS))
    parts = ["<h2>Per-op times (profiling build of the C core)</h2>", "<div class=\"plots\">"]
    for index, result in enumerate(profiled):
        parts.append(_kind_plot(result, index, colours))
    parts.append(_timeline_plot(profiled, colours))
    parts.append("</div>")
    return parts


def _kind_plot(result: dict[str, Any], index: int, colours: dict[str, str]) -> str:
    ops = result["ops"]
    shown = list(ops["by_kind"].items())[:TOP_KINDS]
    top = max((ms for _, ms in shown), default=1.0) or 1.0
    body = []
    for row, (kind, ms) in enumerate(shown):
        body.append(row_label(row, kind))
        width = BAR_WIDTH * ms / top
        body.append(bar_rect(row, 0, width, colours.get(kind, OTHER_KINDS_COLOUR), f"{kind}: {ms:.4g} ms a run"))
        body.append(bar_note(row, width, f"{ms:.3g} ms ({ms / (ops['run_ms'] or 1):.0%})"))
    emulated = " (emulated)" if ops["emulated"] else ""
    return svg_figure(f"{label(result)}: time per op kind, mean of {ops['runs']} runs{emulated}", f"ops-plot-{index}",
                      body, len(shown))


def _timeline_plot(results: list[dict[str, Any]], colours: dict[str, str]) -> str:
    """One row per result: a run of its plan from 0 to its length, each op a segment at its place in the run."""
    body = []
    for row, result in enumerate(results):
        ops = result["ops"]
        body.append(row_label(row, label(result)))
        scale = BAR_WIDTH / (ops["ops_ms"] or 1.0)
        start = 0.0
        for op in ops["ops"]:
            width = op["ms"] * scale
            y = 20 + row * ROW_HEIGHT
            body.append(f"<rect x=\"{LABEL_WIDTH + start:.2f}\" y=\"{y}\" width=\"{width:.2f}\" height=\"18\" "
                        f"fill=\"{colours.get(op['kind'], OTHER_KINDS_COLOUR)}\"><title>op {op['index']} "
                        f"{escape(op['kind'])}: {op['ms']:.4g} ms</title></rect>")
            start += width
        body.append(bar_note(row, BAR_WIDTH, f"{ops['ops_ms']:.3g} ms"))
    legend = [(kind, colour) for kind, colour in colours.items()][:6] + [("other", OTHER_KINDS_COLOUR)]
    return svg_figure("Timeline of one run: the plan's ops in order (each row to its own length)", "timeline-plot",
                      body, len(results), legend, [label(r) for r in results])
