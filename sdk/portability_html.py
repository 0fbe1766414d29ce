"""The portability report as one self-contained HTML page: the score, a table of the profiles, and SVG bar plots of
latency, placement and bytes. No script, no external file: it opens from disk or from a CI artefact."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

PROVIDER_COLOURS = {"reference": "#7f7f7f", "onnx": "#7f7f7f", "cpu": "#1f77b4", "openvino": "#6a3d9a",
                    "coreml": "#e377c2", "neon": "#2ca02c", "webgpu": "#ff7f0e", "wasm": "#d62728"}
OTHER_COLOUR = "#8c564b"
LATENCY_COLOUR = "#1f77b4"
EMULATED_COLOUR = "#aec7e8"
PEER_COLOUR = "#fdae6b"
BYTES_COLOURS = {"model": "#17becf", "runtime": "#bcbd22"}
BAR_WIDTH = 420
ROW_HEIGHT = 26
LABEL_WIDTH = 130
LABEL_CHAR_WIDTH = 7
"""About the width of a character of a 12 px label."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.score { font-size: 28px; font-weight: bold; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; max-width: 420px; }
th { background: #f0f0f0; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #c62828; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 24px; }
.note { color: #666; font-size: 12px; }
"""


def render(report: dict[str, Any]) -> str:
    return _page(f"edgepack portability: {_name(report['model'])}", [_section(report, "h1")])


def render_many(reports: list[dict[str, Any]], unavailable: dict[str, str]) -> str:
    """Several models' portability on one page: a latency matrix of model x profile (p50 on this host and its ratio
    to onnxruntime on the source model), then each model's section; `unavailable` names the profiles this version
    could not build here, with the reason."""
    profiles = list(dict.fromkeys(row["profile"] for report in reports for row in report["profiles"]))
    head = "".join(f"<th>{escape(name)}</th>" for name in ["model", "score", *profiles, "onnxruntime"])
    rows = []
    for report in reports:
        cells = {row["profile"]: _matrix_cell(row, report.get("peer")) for row in report["profiles"]}
        peer = report.get("peer") or {}
        rows.append(f"<tr><td><a href=\"#{_anchor(report['model'])}\">{escape(_name(report['model']))}</a></td>"
                    f"<td>{report['score']:.0%}</td>"
                    + "".join(f"<td>{cells.get(name, '')}</td>" for name in profiles)
                    + f"<td>{_ms(peer.get('p50_ms'))}</td></tr>")
    missing = "".join(f"<li>{escape(name)}: {escape(reason)}</li>" for name, reason in unavailable.items())
    overview = "\n".join([
        f"<h1>edgepack: {len(reports)} models for every profile</h1>",
        "<p>Each cell: the bundle's median latency on this host and its ratio to onnxruntime on the source model "
        "(one thread, the same inputs); <span class=\"bad\">emulated</span> where the time is qemu's, not a "
        "device's.</p>",
        f"<table id=\"overview\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>",
        f"<p>Profiles not available here:</p><ul>{missing}</ul>" if missing else ""])
    return _page("edgepack: portability of every model", [overview, *(_section(r, "h2") for r in reports)])


def _matrix_cell(row: dict[str, Any], peer: dict[str, Any] | None) -> str:
    if not row["passed"]:
        return "<span class=\"bad\">" + ("below tolerance" if row["built"] else "failed") + "</span>"
    latency = row["latency"]
    if not latency or latency["p50_ms"] is None:
        return "<span class=\"note\">not timed</span>"
    ratio = peer_ratio(latency, peer)
    shown = "<span class=\"bad\">emulated</span>" if ratio == "emulated" else escape(ratio)
    return f"{_ms(latency['p50_ms'])}<br>{shown}"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3g} ms"


def _page(title: str, sections: list[str]) -> str:
    return "\n".join([
        "<!doctype html>", "<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\">",
        f"<title>{escape(title)}</title>", f"<style>{STYLE}</style>", "</head><body>", *sections,
        "<p class=\"note\">Latency: median over a few runs on the machine that built the report, one thread; "
        "emulated timings (qemu) are not a device's speed. FLOPs are estimated from the graph's shapes.</p>",
        "</body></html>", ""])


def _section(report: dict[str, Any], heading: str) -> str:
    """One model's score, table of profiles and plots; the plots' ids are unique per model on a page of several."""
    rows = report["profiles"]
    built = sum(r["built"] for r in rows)
    passed = sum(r["passed"] for r in rows)
    suffix = "" if heading == "h1" else f"-{_anchor(report['model'])}"
    return "\n".join([
        f"<section id=\"{_anchor(report['model'])}\">",
        f"<{heading}>Portability of {escape(_name(report['model']))}</{heading}>",
        f"<p><span class=\"score\" id=\"score{suffix}\">{report['score']:.0%}</span> of {len(rows)} profiles built "
        f"and met their fidelity ({built} built, {passed} within tolerance).</p>",
        _table(rows, report.get("peer"), suffix), "<div class=\"plots\">",
        _latency_plot(rows, report.get("peer"), suffix), _placement_plot(rows, suffix), _bytes_plot(rows, suffix),
        "</div>", "</section>"])


def _anchor(model: str) -> str:
    return "model-" + "".join(c if c.isalnum() else "-" for c in _name(model))


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _table(rows: list[dict[str, Any]], peer: dict[str, Any] | None, suffix: str) -> str:
    head = ("profile", "target", "result", "fidelity (worst output)", "bytes: model / runtime", "latency p50",
            "vs onnxruntime", "placement", "changed in conversion, or why it failed")
    lines = [f"<table id=\"profiles{suffix}\"><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
             + "</tr></thead><tbody>"]
    for row in rows:
        result = ("<span class=\"ok\">built</span>" if row["passed"] else
                  "<span class=\"bad\">below tolerance</span>" if row["built"] else "<span class=\"bad\">failed</span>")
        cells = [escape(row["profile"]), escape(row["target"]), result, _fidelity(row["fidelity"]),
                 f"{row['bytes']['model']:,} / {row['bytes']['runtime']:,}" if row["bytes"] else "",
                 _latency(row["latency"]), escape(peer_ratio(row["latency"], peer)), _placement(row["placement"]),
                 escape(row["error"]) if row["error"] else "<br>".join(escape(item) for item in row["lost"])]
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    lines.append("</tbody></table>")
    return "\n".join(lines)


def _fidelity(fidelity: dict[str, Any] | None) -> str:
    if not fidelity:
        return ""
    top1 = fidelity["top1_agreement"]
    emulation = fidelity.get("emulation")
    return (f"cosine {fidelity['cosine']:.6f}<br>max abs diff {fidelity['max_abs_diff']:.3g}"
            + (f"<br>top-1 {top1:.0%}" if top1 is not None else "") + f"<br>{fidelity['samples']} sample(s)"
            + ("" if emulation is None else f"<br><span class=\"note\">{escape(_emulation(emulation))}</span>"))


def _emulation(emulation: dict[str, Any]) -> str:
    where = f"verified on {', '.join(emulation['verified_on'])}; {', '.join(emulation['emulated'])} emulated"
    if "not_run" in emulation:
        return f"{where}: not run ({emulation['not_run']})"
    return f"{where} on 1 sample: {'matches' if emulation['passed'] else 'DIFFERS'}"


def _latency(latency: dict[str, Any] | None) -> str:
    if not latency:
        return ""
    if latency["p50_ms"] is None:
        return f"not timed: {escape(latency['not_timed'] or '')}"
    return f"{latency['p50_ms']:.3g} ms<br><span class=\"note\">{escape(latency['engine'])}</span>"


def peer_ratio(latency: dict[str, Any] | None, peer: dict[str, Any] | None) -> str:
    """The bundle's p50 over onnxruntime's on the source model, as `0.85x`; `emulated` where the bundle's time is an
    emulator's (no ratio to a native time means anything there)."""
    if not latency or latency["p50_ms"] is None or not peer or peer["p50_ms"] is None:
        return ""
    if latency["emulated"]:
        return "emulated"
    return f"{latency['p50_ms'] / peer['p50_ms']:.2f}x"


def _placement(placement: list[dict[str, Any]]) -> str:
    return "<br>".join(f"{escape(p['provider'])}: {p['node_share']:.0%} of nodes"
                       + (f", {p['flop_share']:.0%} of FLOPs" if p["flop_share"] is not None else "")
                       for p in placement)


def svg_figure(title: str, plot_id: str, body: list[str], rows: int, legend: Sequence[tuple[str, str]] = (),
               labels: Sequence[str] = ()) -> str:
    """An SVG plot of `rows` rows drawn by `body`; `labels` (the rows' labels) widen it on the left where they are
    longer than the label column."""
    indent = max(0, LABEL_CHAR_WIDTH * max(map(len, labels), default=0) - (LABEL_WIDTH - 8))
    height = 30 + rows * ROW_HEIGHT + (24 if legend else 0)
    width = indent + LABEL_WIDTH + BAR_WIDTH + 130
    parts = [f"<figure><figcaption>{escape(title)}</figcaption>",
             f"<svg id=\"{plot_id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" "
             f"role=\"img\" aria-label=\"{escape(title)}\">", f"<g transform=\"translate({indent},0)\">", *body]
    x = LABEL_WIDTH
    for label, colour in legend:
        parts.append(f"<rect x=\"{x}\" y=\"{height - 18}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
                     f"<text x=\"{x + 16}\" y=\"{height - 8}\" font-size=\"12\">{escape(label)}</text>")
        x += 24 + 8 * len(label)
    parts.append("</g></svg></figure>")
    return "\n".join(parts)


def row_label(index: int, text: str) -> str:
    y = 20 + index * ROW_HEIGHT
    return f"<text x=\"{LABEL_WIDTH - 8}\" y=\"{y + 14}\" font-size=\"12\" text-anchor=\"end\">{escape(text)}</text>"


def bar_rect(index: int, start: float, width: float, colour: str, tip: str) -> str:
    y = 20 + index * ROW_HEIGHT
    return (f"<rect x=\"{LABEL_WIDTH + start:.1f}\" y=\"{y}\" width=\"{max(width, 1):.1f}\" height=\"18\" "
            f"fill=\"{colour}\"><title>{escape(tip)}</title></rect>")


def bar_note(index: int, end: float, text: str) -> str:
    """A figure's text just past the end of row `index`'s bar, `end` pixels long."""
    return (f"<text x=\"{LABEL_WIDTH + end + 6:.1f}\" y=\"{34 + index * ROW_HEIGHT}\" font-size=\"12\">"
            f"{escape(text)}</text>")


def log_lengths(values: Sequence[float]) -> Callable[[float], float]:
    """Bar lengths on a log scale from a quarter of the smallest of `values` (so that its bar still shows) to the
    largest, which takes the whole BAR_WIDTH."""
    low, top = min(values, default=1.0) / 4, max(values, default=1.0)
    span = math.log(top / low) or 1.0
    return lambda value: BAR_WIDTH * math.log(value / low) / span


def _latency_plot(rows: list[dict[str, Any]], peer: dict[str, Any] | None, suffix: str) -> str:
    """p50 bars on a log scale: emulated times are tens of times the native ones, which a linear scale would hide.
    The peer (onnxruntime on the source model) is the last row, in its own colour."""
    if peer:
        rows = [*rows, {"profile": "onnxruntime", "latency": {**peer, "peer": True}}]
    length = log_lengths([r["latency"]["p50_ms"] for r in rows if r["latency"] and r["latency"]["p50_ms"]])
    body = []
    for index, row in enumerate(rows):
        body.append(row_label(index, row["profile"]))
        latency = row["latency"]
        if latency and latency["p50_ms"]:
            width = length(latency["p50_ms"])
            colour = PEER_COLOUR if latency.get("peer") else EMULATED_COLOUR if latency["emulated"] else LATENCY_COLOUR
            body.append(bar_rect(index, 0, width, colour, latency["engine"]))
            body.append(bar_note(index, width, f"{latency['p50_ms']:.3g} ms"))
        else:
            body.append(f"<text x=\"{LABEL_WIDTH + 4}\" y=\"{34 + index * ROW_HEIGHT}\" font-size=\"12\" "
                        f"fill=\"#888\">not timed</text>")
    legend = [("native", LATENCY_COLOUR), ("emulated", EMULATED_COLOUR)] + ([("onnxruntime", PEER_COLOUR)] if peer
                                                                          else [])
    return svg_figure("Latency on this host (p50, log scale)", f"latency-plot{suffix}", body, len(rows), legend)


def _placement_plot(rows: list[dict[str, Any]], suffix: str) -> str:
    body, seen = [], {}
    for index, row in enumerate(rows):
        body.append(row_label(index, row["profile"]))
        start = 0.0
        by_flops = bool(row["placement"]) and all(p["flop_share"] is not None for p in row["placement"])
        for part in row["placement"]:
            share = part["flop_share"] if by_flops else part["node_share"]
            colour = PROVIDER_COLOURS.get(part["provider"], OTHER_COLOUR)
            seen[part["provider"]] = colour
            unit = "FLOPs" if by_flops else "nodes"
            body.append(bar_rect(index, start, BAR_WIDTH * share, colour, f"{part['provider']}: {share:.0%} of {unit}"))
            start += BAR_WIDTH * share
    return svg_figure("Placement per provider (share of FLOPs, else of nodes)", f"placement-plot{suffix}", body,
                      len(rows), list(seen.items()))


def _bytes_plot(rows: list[dict[str, Any]], suffix: str) -> str:
    """Each bundle's bytes as a bar on a log scale (a runtime of a megabyte beside a model of kilobytes, which a
    linear scale would shrink to a few pixels), split between model and runtime in proportion to their bytes."""
    length = log_lengths([r["bytes"]["bundle"] for r in rows if r["bytes"] and r["bytes"]["bundle"]])
    body = []
    for index, row in enumerate(rows):
        body.append(row_label(index, row["profile"]))
        sizes = row["bytes"]
        if not sizes or not sizes["bundle"]:
            continue
        bundle, start = length(sizes["bundle"]), 0.0
        for kind, colour in BYTES_COLOURS.items():
            width = bundle * sizes[kind] / sizes["bundle"]
            if width > 0:
                body.append(bar_rect(index, start, width, colour, f"{kind}: {sizes[kind]:,} bytes"))
            start += width
        body.append(bar_note(index, bundle, f"{sizes['bundle']:,} bytes"))
    return svg_figure("Bundle bytes (log scale; model and runtime in proportion)", f"bytes-plot{suffix}", body,
                      len(rows), list(BYTES_COLOURS.items()))
