"""The kernel selection table (runtime/native/kernel_choice.toml): the C header made from it looks up the grid of the
kind the compiler builds for (AVX-512, AVX2 or the default rule) the way kernel_choice.py does, cell edges and values
between them included, and the compiler reserves Winograd's scratch wherever any kind's core may take it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from edgepack.runtime.native.build import compiler, core_kind
from edgepack.runtime.native.kernel_choice import c_header, winograd_may_run, winograd_table, winograd_wins

PROBE = """#include <stdio.h>
#include "kernel_choice.h"
int main(void) {
    long long v[] = {VALUES};
    for (unsigned i = 0; i < sizeof v / sizeof *v; i++)
        for (unsigned j = 0; j < sizeof v / sizeof *v; j++) putchar('0' + ep_winograd_wins(v[i], v[j]));
    return 0;
}
"""


def probe_values() -> list[int]:
    """Every channel and tile edge, one under and one over each, 1 and a value past the last."""
    table = winograd_table()
    edges = sorted({*table.channels, *table.tiles})
    return sorted({1, 1 << 16, *edges, *(e - 1 for e in edges), *(e + 1 for e in edges)})


@pytest.mark.parametrize("march", ["native", "x86-64-v3", "x86-64"])
def test_the_c_lookup_is_the_tables_for_the_kind_compiled(march: str, tmp_path: Path) -> None:
    (tmp_path / "kernel_choice.h").write_text(c_header())
    values = probe_values()
    (tmp_path / "probe.c").write_text(PROBE.replace("VALUES", ", ".join(map(str, values))))
    subprocess.run([compiler(), f"-march={march}", "-std=c11", "-Wall", "-Werror", "-o", str(tmp_path / "probe"),
                    str(tmp_path / "probe.c")], check=True)
    printed = subprocess.run([str(tmp_path / "probe")], capture_output=True, text=True, check=True).stdout
    kind = core_kind(march)
    expected = "".join(str(int(winograd_wins(kind, c, t))) for c in values for t in values)
    assert printed == expected, kind
    assert kind == {"x86-64": "default"}.get(march, kind)


def test_winograd_scratch_is_reserved_wherever_some_kind_may_take_it() -> None:
    values = probe_values()
    kinds = [*winograd_table().ratios, "default"]
    for channels in values:
        for tiles in values:
            assert winograd_may_run(channels, tiles) == any(winograd_wins(k, channels, tiles) for k in kinds)


def test_each_measured_kind_has_a_full_grid_of_ratios() -> None:
    table = winograd_table()
    assert table.ratios, "no CPU kind measured"
    for kind, grid in table.ratios.items():
        assert len(grid) == len(table.channels) and {len(row) for row in grid} == {len(table.tiles)}, kind
        assert all(0.05 < ratio < 20 for row in grid for ratio in row), kind
