"""The module's native libraries: the C core and the JNI bridge built freestanding (no NDK, no libc) with clang's
Android targets for each ABI, then checked as Android loads them: ELF machine, no undefined symbols, only JNI entry
points exported, no `DT_NEEDED`, no text relocations, 16 KB page alignment. Each source is compiled on its own into
an object kept in edgepack's cache under the hash of its text, the headers it includes, the flags and the compiler, so
that the kernels a model shares with an earlier build (on any model) are not compiled again."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.native.build import cache_root, cached

CLANG = "clang"
MIN_SDK = 24
PAGE_ALIGN = 16384
"""Android 15 requires 16 KB aligned LOAD segments of apps targeting it (and of every device with 16 KB pages)."""
COMPILE_FLAGS = ["-std=c11", "-O3", "-ffp-contract=fast", "-fPIC", "-nostdlibinc", "-fvisibility=hidden",
                 "-ffunction-sections", "-fdata-sections"]
LINK_FLAGS = ["-shared", "-nostdlib", "-fuse-ld=lld", "-Wl,--no-undefined", f"-Wl,-z,max-page-size={PAGE_ALIGN}",
              "-Wl,--gc-sections", "-Wl,--build-id=none", "-Wl,--strip-all", "-Wl,-z,noexecstack"]
LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
EXPORTED_PREFIXES = ("Java_",)


@dataclass(frozen=True)
class Abi:
    name: str
    """The Android ABI name, as jniLibs and the AAR's jni/ folder name it."""
    triple: str
    machine: str
    """pyelftools' name of the ELF machine."""
    flags: tuple[str, ...] = ()


ABIS = (
    Abi("arm64-v8a", f"aarch64-linux-android{MIN_SDK}", "EM_AARCH64"),
    Abi("armeabi-v7a", f"armv7a-linux-androideabi{MIN_SDK}", "EM_ARM", ("-mthumb", "-mfpu=neon", "-mfloat-abi=softfp")),
    Abi("x86_64", f"x86_64-linux-android{MIN_SDK}", "EM_X86_64"),
)


def missing_tools() -> str | None:
    """None when clang and lld are here to build the libraries, else what to install."""
    if not shutil.which(CLANG) or not shutil.which("ld.lld"):
        return "clang and lld build its native libraries (apt-get install clang lld)"
    return None


def build(abi: Abi, sources: list[Path], include_dirs: list[Path], output: Path) -> Path:
    """Compiles `sources` into the shared library `output` for `abi`, then checks it."""
    reason = missing_tools()
    if reason:
        raise EdgepackError(f"the android target needs {reason}", where="android target",
                            fix="install them, or build another profile")
    output.parent.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        objects = list(pool.map(lambda source: _object(abi, source, include_dirs), sources))
    _run([CLANG, f"--target={abi.triple}", *abi.flags, *LINK_FLAGS, f"-Wl,-soname,{output.name}", "-o", str(output),
          *map(str, objects)], abi)
    problems = check(output, abi)
    if problems:
        raise EdgepackError(f"the {abi.name} library {output.name} would not load on Android: {'; '.join(problems)}",
                            where=str(output), fix="report this to edgepack")
    return output


def _object(abi: Abi, source: Path, include_dirs: list[Path]) -> Path:
    """`source` compiled for `abi`: from the cache, or compiled into it (`cached`)."""
    flags = [f"--target={abi.triple}", *abi.flags, *COMPILE_FLAGS]
    digest = hashlib.sha256("\0".join([_compiler_version(), *flags]).encode())
    for path in [source, *sorted(_included(source, include_dirs))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    target = cache_root() / "android" / f"{source.stem}-{abi.name}-{digest.hexdigest()[:16]}.o"
    return cached(target, lambda temporary: _run([CLANG, *flags, *(f"-I{folder}" for folder in include_dirs), "-c",
                                                  "-o", str(temporary), str(source)], abi))


def _included(source: Path, include_dirs: list[Path]) -> set[Path]:
    """The local headers `source` includes, transitively, found as the compiler finds them (its folder, then
    `include_dirs`)."""
    found: set[Path] = set()
    pending = [source]
    while pending:
        path = pending.pop()
        for name in LOCAL_INCLUDE.findall(path.read_text()):
            header = next((folder / name for folder in [path.parent, *include_dirs] if (folder / name).is_file()),
                          None)
            if header is not None and header.resolve() not in found:
                found.add(header.resolve())
                pending.append(header)
    return found


@functools.cache
def _compiler_version() -> str:
    return subprocess.run([CLANG, "--version"], capture_output=True, text=True).stdout


def _run(command: list[str], abi: Abi) -> None:
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EdgepackError(f"building the {abi.name} library failed: {proc.stderr.strip()[:2000]}",
                            where=" ".join(command[:3]), fix="check clang and lld (apt-get install clang lld)")


def check(library: Path, abi: Abi) -> list[str]:
    """What stops Android from loading `library` for `abi` (empty when nothing does)."""
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    problems = []
    with library.open("rb") as stream:
        elf = ELFFile(stream)
        if elf["e_machine"] != abi.machine or elf["e_type"] != "ET_DYN":
            problems.append(f"it is {elf['e_type']} for {elf['e_machine']}, not a shared object for {abi.machine}")
        for segment in elf.iter_segments("PT_LOAD"):
            if segment["p_align"] < PAGE_ALIGN:
                problems.append(f"a LOAD segment is aligned to {segment['p_align']} bytes, not {PAGE_ALIGN}")
        dynamic = next((s for s in elf.iter_sections() if isinstance(s, DynamicSection)), None)
        tags = [tag.entry.d_tag for tag in dynamic.iter_tags()] if dynamic else []
        if "DT_NEEDED" in tags:
            needed = [tag.needed for tag in dynamic.iter_tags("DT_NEEDED")]
            problems.append(f"it needs {', '.join(needed)}")
        if "DT_TEXTREL" in tags:
            problems.append("it has text relocations")
        symbols = elf.get_section_by_name(".dynsym")
        for symbol in symbols.iter_symbols() if symbols else []:
            if not symbol.name:
                continue
            if symbol["st_shndx"] == "SHN_UNDEF":
                problems.append(f"it uses the undefined symbol {symbol.name}")
            elif symbol["st_info"]["bind"] != "STB_LOCAL" and not symbol.name.startswith(EXPORTED_PREFIXES):
                problems.append(f"it exports {symbol.name}, which is not a JNI entry point")
    return problems
