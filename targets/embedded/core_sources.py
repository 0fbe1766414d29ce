"""Which C core files a plan needs: the loader, executor and helpers always, the kernel files that define the
kernels of the plan's ops, and every file defining a function or kernel that a chosen file uses. Everything is read
from the core's own sources, so a kernel or helper added there is found here without a change."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from edgepack.runtime.native.build import NATIVE
from edgepack.runtime.native.op_contract import contract, generated_c

from .. import write_file

KERNELS = NATIVE / "kernels"
KERNEL_DEFINITION = re.compile(r"^const ep_kernel (ep_kernel_\w+)\s*=", re.MULTILINE)
GLOBAL_DEFINITION = re.compile(r"^(?!static\b)(?:const ep_kernel |[A-Za-z_][\w \t*]*?[\s*])(ep_\w+)\s*[=(]",
                               re.MULTILINE)
"""A definition at file scope of a non-static `ep_` function or kernel (prototypes live in headers)."""
CORE_NAME = re.compile(r"\bep_\w+")
LOCAL_INCLUDE = re.compile(r'^#include "([\w./]+)"', re.MULTILINE)


@dataclass(frozen=True)
class CoreSelection:
    files: list[Path]
    """Core files to copy, relative to the core's root (runtime/native)."""
    kernels: dict[str, str]
    """Op enum name (COPY, CONV, ...) -> kernel symbol, for the ops the plan uses."""


def kernel_files() -> dict[str, Path]:
    """Kernel symbol -> the kernel source that defines it."""
    found = {}
    for path in sorted(KERNELS.glob("*.c")):
        for symbol in KERNEL_DEFINITION.findall(path.read_text()):
            found[symbol] = path
    return found


def core_definitions() -> dict[str, Path]:
    """Every non-static `ep_` function and kernel of the core's .c files -> the file defining it."""
    found = {}
    for path in [*sorted(NATIVE.glob("*.c")), *sorted(KERNELS.glob("*.c"))]:
        for symbol in GLOBAL_DEFINITION.findall(path.read_text()):
            found[symbol] = path.resolve()
    return found


def with_dependencies(sources: Iterable[Path]) -> set[Path]:
    """`sources` plus, transitively, the headers they include and the files defining the `ep_` names they use."""
    definitions = core_definitions()
    pending, seen = list(sources), set()
    while pending:
        path = pending.pop().resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        text = path.read_text()
        for included in LOCAL_INCLUDE.findall(text):
            header = (path.parent / included).resolve()
            pending.append(header if header.is_file() else (NATIVE / included).resolve())
        pending += [definitions[name] for name in set(CORE_NAME.findall(text)) if name in definitions]
    return seen


def select(op_ids: Iterable[int]) -> CoreSelection:
    """The core files and kernels for a plan whose ops have `op_ids`."""
    ops, files = contract().ops, kernel_files()
    kernels = {ops[i].c_name: ops[i].kernel for i in sorted(set(op_ids))}
    base = [*sorted(NATIVE.glob("*.c")), *sorted(NATIVE.glob("*.h")), NATIVE / "include" / "edgepack.h"]
    needed = with_dependencies([*base, *(files[symbol] for symbol in kernels.values())])
    root = NATIVE.resolve()
    return CoreSelection(sorted(p.relative_to(root) for p in needed), kernels)


def write_sources(folder: Path, selection: CoreSelection) -> list[Path]:
    """Writes the selected core files under `folder` in the core's own layout (edgepack.h under include/), with ops.h
    and the kernel registry trimmed to the selection; returns the C files written."""
    written = []
    for relative in selection.files:
        write_file(folder / relative, (NATIVE / relative).read_text())
        written.append(folder / relative)
    for relative, text in generated_c(selection.kernels).items():
        write_file(folder / relative, text)
        written.append(folder / relative)
    return [path for path in written if path.suffix == ".c"]
