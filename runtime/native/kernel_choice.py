"""The kernel selection table (`kernel_choice.toml`): which kernel the C core runs for a shape, per CPU kind it is
compiled for, as `benchmarks/kernel_choice.py` measured it. It decides where 3x3 stride-1 convs run as Winograd
F(2x2, 3x3) rather than directly. The C header `kernels/kernel_choice.h` is made from it (written beside the sources
each time the core is built or shipped), and the compiler reserves a conv's Winograd scratch where any kind's core
may take that path, since one plan runs on every core."""

from __future__ import annotations

import bisect
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

TABLE = Path(__file__).with_name("kernel_choice.toml")
KINDS = {"avx512": "defined(__AVX512F__)", "avx2": "defined(__AVX2__) && defined(__FMA__)"}
"""The CPU kinds a table may hold, each with the C condition of a core compiled for it, in the order they are tried:
a core that is none of them (NEON, SSE, the sanitized builds) takes the default rule."""
FORCE_MACRO = "EP_WINOGRAD_CHOICE"
"""Compiled with -DEP_WINOGRAD_CHOICE=1 the core runs every 3x3 stride-1 conv it may as Winograd, with 0 none: the
benchmark's and the tests' two sides of each shape."""


@dataclass(frozen=True)
class WinogradTable:
    channels: tuple[int, ...]
    """Row edges: the smaller of a group's input and output channels, at least this many."""
    tiles: tuple[int, ...]
    """Column edges: 2x2 output tiles, at least this many."""
    faster_below: float
    """Winograd runs where its latency over the direct conv's is under this."""
    default_channels: int
    default_tiles: int
    """The rule of kinds not measured: Winograd from this many channels and tiles."""
    ratios: dict[str, tuple[tuple[float, ...], ...]]
    """Per measured kind, Winograd's latency over the direct conv's at each (channels, tiles) edge."""

    def wins(self, kind: str) -> np.ndarray:
        """Where `kind`'s core runs Winograd, a boolean grid over (channels, tiles) edges."""
        if kind in self.ratios:
            return np.array(self.ratios[kind]) < self.faster_below
        return np.logical_and.outer(np.array(self.channels) >= self.default_channels,
                                    np.array(self.tiles) >= self.default_tiles)


@cache
def winograd_table() -> WinogradTable:
    raw = tomllib.loads(TABLE.read_text())["winograd"]
    channels, tiles = tuple(raw["channels"]), tuple(raw["tiles"])
    ratios = {kind: tuple(tuple(row) for row in raw[kind]["ratio"]) for kind in KINDS if kind in raw}
    for kind, grid in ratios.items():
        if len(grid) != len(channels) or any(len(row) != len(tiles) for row in grid):
            raise ValueError(f"{TABLE}: winograd.{kind}.ratio is not {len(channels)} rows of {len(tiles)}")
    return WinogradTable(channels, tiles, raw["faster_below"], raw["default"]["min_channels"],
                         raw["default"]["min_tiles"], ratios)


def winograd_channels(inputs: int, outputs: int) -> int:
    """The table's channels for a conv of a group's `inputs` and `outputs` channels (winograd.c's
    `winograd_channels`): the inputs, the sum of each of Winograd's 16 products, at most twice the outputs. The table
    is measured on C -> C convs; on AMD EPYC (AVX2) Winograd took 0.65 to 0.85 of the direct conv's time at 96 -> 24,
    128 -> 32 and 64 -> 16 channels (the smaller side had kept them direct), and 1.07 to 1.45 at 24 -> 96, 16 -> 64,
    48 -> 12 and 96 -> 4, which stay direct."""
    return min(inputs, 2 * outputs)


def winograd_wins(kind: str, channels: int, tiles: int) -> bool:
    """Whether the core compiled for `kind` ("default" for a kind not measured) runs a conv of these channels
    (`winograd_channels`) and 2x2 output tiles as Winograd: the grid's cell at the largest edges not above them."""
    table = winograd_table()
    row, column = bisect.bisect_right(table.channels, channels) - 1, bisect.bisect_right(table.tiles, tiles) - 1
    return row >= 0 and column >= 0 and bool(table.wins(kind)[row, column])


_everywhere = False


@contextmanager
def winograd_everywhere() -> Iterator[None]:
    """Plans lowered inside reserve Winograd's scratch for every conv it may run: for a core compiled with
    -DEP_WINOGRAD_CHOICE=1."""
    global _everywhere
    _everywhere = True
    try:
        yield
    finally:
        _everywhere = False


def winograd_may_run(channels: int, tiles: int) -> bool:
    """Whether some kind's core runs this conv as Winograd (so its plan must hold the scratch)."""
    return _everywhere or any(winograd_wins(kind, channels, tiles) for kind in [*winograd_table().ratios, "default"])


def c_header() -> str:
    """kernels/kernel_choice.h: the grid of each measured kind under its C condition, the default rule's otherwise."""
    table = winograd_table()

    def grid(kind: str) -> str:
        rows = ",\n".join("    {" + ", ".join(str(int(v)) for v in row) + "}" for row in table.wins(kind))
        return f"static const unsigned char ep_winograd_grid[{len(table.channels)}][{len(table.tiles)}] = {{\n{rows}}};"

    branches = [f"#{'if' if i == 0 else 'elif'} {condition} /* {kind} */\n{grid(kind)}"
                for i, (kind, condition) in enumerate(KINDS.items()) if kind in table.ratios]
    branches.append(("#else /* not measured */\n" if branches else "") + grid("default"))
    return "\n".join([
        "/* Generated from runtime/native/kernel_choice.toml by kernel_choice.py: do not edit. */",
        "#ifndef EP_KERNEL_CHOICE_H",
        "#define EP_KERNEL_CHOICE_H",
        "#include <stdint.h>",
        "",
        f"#ifdef {FORCE_MACRO}",
        "static inline int ep_winograd_wins(int64_t channels, int64_t tiles) {",
        "    (void)channels;",
        "    (void)tiles;",
        f"    return {FORCE_MACRO};",
        "}",
        "#else",
        f"static const int64_t ep_winograd_channels[{len(table.channels)}] = {{{_list(table.channels)}}};",
        f"static const int64_t ep_winograd_tiles[{len(table.tiles)}] = {{{_list(table.tiles)}}};",
        *branches,
        *(["#endif"] if len(branches) > 1 else []),
        "",
        "/* The grid's cell at the largest edges not above `channels` and `tiles` (none below the first). */",
        "static inline int ep_winograd_wins(int64_t channels, int64_t tiles) {",
        "    int64_t row = -1, column = -1;",
        f"    while (row + 1 < {len(table.channels)} && ep_winograd_channels[row + 1] <= channels) row++;",
        f"    while (column + 1 < {len(table.tiles)} && ep_winograd_tiles[column + 1] <= tiles) column++;",
        "    return row >= 0 && column >= 0 && ep_winograd_grid[row][column];",
        "}",
        "#endif",
        "",
        "#endif",
        "",
    ])


def _list(values: tuple[int, ...]) -> str:
    return ", ".join(map(str, values))
