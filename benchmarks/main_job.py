"""The main job: build every sample model for every built-in profile, then benchmark the slimmer.

Profiles whose target this version cannot build are reported as such, not skipped silently.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

import edgepack
from edgepack import samples
from edgepack.build_checks import target_available
from edgepack.packager.lower import FIXED_SHAPE_FORMS
from edgepack.profile import builtin_names
from edgepack.targets import TARGETS


def fixed_shapes(profile: edgepack.Profile) -> bool:
    """Whether the profile's plans (and CoreML programs) are built for fixed input shapes: then every input is pinned
    to its sample's shape."""
    target = TARGETS[profile.target]
    return any(target.forms.get(provider) in FIXED_SHAPE_FORMS for provider in profile.providers)


def main() -> int:
    console = Console(width=160)
    table = Table(title="edgepack build: every sample model for every built-in profile", title_justify="left")
    for column in ("profile", "model", "nodes", "bytes (bundle: model + manifest)", "seconds", "result"):
        table.add_column(column, justify="left" if column in ("profile", "model", "result") else "right")
    failures = 0
    with tempfile.TemporaryDirectory() as out:
        for profile_name in builtin_names():
            profile = edgepack.load_profile(profile_name)
            reason = target_available(profile)
            if reason:
                table.add_row(profile_name, "(all)", "", "", "", f"[yellow]not available: {reason}[/]")
                continue
            for name in samples.names():
                sample = samples.SAMPLES[name]
                feeds = samples.feeds(name)
                shapes = {key: value.shape for key, value in feeds.items()} if fixed_shapes(profile) \
                    else sample.shapes
                with console.status(f"building {name} for {profile_name}"):
                    try:
                        result = edgepack.build(samples.path(name), profile, out, input_shapes=shapes,
                                                sample_inputs=[feeds])
                    except edgepack.EdgepackError as exc:
                        failures += 1
                        table.add_row(profile_name, name, "", "", "", f"[red]{exc}[/]")
                        continue
                r = result.report
                table.add_row(profile_name, name, f"{r.source_nodes} -> {r.slim_nodes}",
                              f"{r.source_bytes:,} -> {r.bundle_bytes:,}",
                              f"{sum(s.seconds for s in r.stages):.2f}", "[green]ok[/]")
    console.print(table)
    bench = Path(__file__).with_name("slim_vs_peers.py")
    code = subprocess.call([sys.executable, str(bench), "--repeat", "3"])
    return 1 if failures or code else 0


if __name__ == "__main__":
    sys.exit(main())
