"""Writing and describing the bundle manifest (`manifest.json`); its format and reader are the runtime's
(`edgepack.runtime.bundle_format`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgepack.runtime.bundle_format import MANIFEST, sha256_file


def artifacts_of(folder: Path) -> dict[str, dict[str, Any]]:
    """sha256 and size of every file under `folder` but the manifest, by POSIX relative path."""
    return {
        path.relative_to(folder).as_posix(): {"sha256": sha256_file(path), "bytes": path.stat().st_size}
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (folder / MANIFEST).write_text(text, encoding="utf-8")


def rounding_phrase(weight_rounding: str) -> str:
    """The manifest's `weight_rounding` for a summary line, without its parenthesized advice or scope."""
    return f"weights rounded {weight_rounding.split(' (')[0]}"


def describe_quantization(quantization: dict[str, Any]) -> str:
    """The manifest's `quantization` in one line: precisions, how activations were quantized, what stayed float."""
    text = f"weights {quantization['weights']}, activations {quantization['activations']}"
    if quantization.get("activation_form"):
        text += f" ({quantization['activation_form']})"
    if quantization.get("weight_rounding"):
        text += f", {rounding_phrase(quantization['weight_rounding'])}"
    if quantization.get("kept_in_float"):
        text += f", {len(quantization['kept_in_float'])} nodes kept in fp32 for fidelity"
    if quantization.get("excluded"):
        text += f", {len(quantization['excluded'])} excluded"
    return text
