"""Bench results (schema edgepack-bench/1) side by side: the ratios to the first one, as lines, and as one
self-contained HTML page with a table and SVG plots (each run's latency as a strip, p50 bars). Emulated results are
labelled in every form."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from edgepack.runtime.errors import EdgepackError

from .portability_html import (
    BAR_WIDTH,
    EMULATED_COLOUR,
    LABEL_WIDTH,
    LATENCY_COLOUR,
    ROW_HEIGHT,
    STYLE,
    bar_rect,
    row_label,
    svg_figure,
)

SCHEMA = "edgepack-bench/1"


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
        results.append(result)
    return results


def label(result: dict[str, Any]) -> str:
    """`<profile> on <device>`, with `(emulated)` where the timings are an emulator's."""
    emulated = " (emulated)" if result["emulated"] else ""
    return f"{result['bundle']['profile']} on {result['device']['spec']}{emulated}"


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
    """Each timed run as a tick on a common axis from 0 to the slowest run, the p50 as a taller mark."""
    top = max(max(r["times_ms"], default=0.0) for r in results) or 1.0
    body = []
    for index, result in enumerate(results):
        body.append(row_label(index, label(result)))
        colour = EMULATED_COLOUR if result["emulated"] else LATENCY_COLOUR
        y = 20 + index * ROW_HEIGHT
        for time_ms in result["times_ms"]:
            x = LABEL_WIDTH + BAR_WIDTH * time_ms / top
            body.append(f"<rect x=\"{x - 1.5:.1f}\" y=\"{y + 3}\" width=\"3\" height=\"12\" fill=\"{colour}\" "
                        f"fill-opacity=\"0.6\"/>")
        x = LABEL_WIDTH + BAR_WIDTH * result["latency_ms"]["p50"] / top
        body.append(f"<rect x=\"{x - 2:.1f}\" y=\"{y}\" width=\"4\" height=\"18\" fill=\"#222\">"
                    f"<title>p50 {result['latency_ms']['p50']:.3f} ms</title></rect>")
    body.append(f"<text x=\"{LABEL_WIDTH + BAR_WIDTH}\" y=\"{32 + len(results) * ROW_HEIGHT}\" font-size=\"11\" "
                f"text-anchor=\"end\">{top:.3g} ms</text>")
    return svg_figure("Latency of every timed run (black: p50)", "latency-distribution", body, len(results) + 1,
                      [("native", LATENCY_COLOUR), ("emulated", EMULATED_COLOUR)])


def _p50_plot(results: list[dict[str, Any]]) -> str:
    top = max(r["latency_ms"]["p50"] for r in results) or 1.0
    body = []
    for index, result in enumerate(results):
        p50 = result["latency_ms"]["p50"]
        body.append(row_label(index, label(result)))
        width = BAR_WIDTH * p50 / top
        body.append(bar_rect(index, 0, width, EMULATED_COLOUR if result["emulated"] else LATENCY_COLOUR,
                             f"p50 {p50:.3f} ms"))
        body.append(f"<text x=\"{LABEL_WIDTH + width + 6:.1f}\" y=\"{34 + index * ROW_HEIGHT}\" font-size=\"12\">"
                    f"{p50:.3g} ms</text>")
    return svg_figure("Median latency (p50)", "p50-plot", body, len(results),
                      [("native", LATENCY_COLOUR), ("emulated", EMULATED_COLOUR)])
