"""Mixed precision: a lowered build below the profile's tolerance keeps its most sensitive nodes in fp32 until the
tolerance holds, and the manifest says which."""

from __future__ import annotations

from pathlib import Path

import edgepack
from edgepack import samples


def strict_profile(folder: Path, min_cosine: str) -> Path:
    text = (Path(edgepack.__file__).parent / "profiles" / "intel-nuc.toml").read_text()
    path = folder / "intel-nuc-strict.toml"
    path.write_text(text.replace('name = "intel-nuc"', 'name = "intel-nuc-strict"')
                    .replace("min_cosine = 0.9999", f"min_cosine = {min_cosine}"))
    return path


def test_a_build_below_tolerance_keeps_sensitive_nodes_in_fp32(tmp_path: Path) -> None:
    feeds = [samples.feeds("tiny-cnn")]
    relaxed = edgepack.build(samples.path("tiny-cnn"), "intel-nuc", tmp_path / "relaxed", sample_inputs=feeds)
    strict = edgepack.build(samples.path("tiny-cnn"), strict_profile(tmp_path, "0.9999999999"), tmp_path / "strict",
                            sample_inputs=feeds)
    loose = relaxed.manifest["quantization"]
    tight = strict.manifest["quantization"]
    assert loose["kept_in_float"] == [] and "mixed precision" not in [s.name for s in relaxed.report.stages]
    assert tight["kept_in_float"], "nothing was kept in fp32"
    assert tight["quantized_nodes"] == loose["quantized_nodes"] - len(tight["kept_in_float"])
    assert strict.manifest["fidelity"]["passed"]
    worst = min(m["cosine"] for m in strict.manifest["fidelity"]["outputs"].values())
    assert worst >= 0.9999999999
    assert "mixed precision" in [s.name for s in strict.report.stages]
    assert strict.report.bundle_bytes > relaxed.report.bundle_bytes
