"""Builds the C core for the host with the system C compiler, once per source/flags hash, into a cache folder."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import platformdirs

from edgepack.runtime.errors import EdgepackError

from .kernel_choice import FORCE_MACRO, KINDS
from .op_contract import generated_c, write_generated_c

NATIVE = Path(__file__).parent
REGISTRY = "kernels/registry.c"
"""The kernel registry, generated from the op contract into the staged sources."""
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fno-math-errno", "-fno-trapping-math"]
"""-fno-trapping-math lets GCC turn a loop's float compares (clamps, selects) into vector blends on ISAs without
masks (AVX2, NEON): without it QuantizeLinear's loops stay scalar there (clang assumes it by default)."""
RELEASE = ["-O3", "-march=native", "-ffp-contract=fast", "-fno-semantic-interposition"]
SANITIZED = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]


def sources() -> list[Path]:
    """The core's C sources (loader, executor, helpers and every kernel but the generated registry)."""
    return sorted(NATIVE.glob("*.c")) + sorted((NATIVE / "kernels").glob("*.c"))


def headers() -> list[Path]:
    return sorted(NATIVE.rglob("*.h"))


def stage_sources(folder: Path, files: list[Path], kernels: dict[str, str] | None = None) -> list[Path]:
    """Copies the core's headers and `files` into `folder` (same layout) with the files generated from the op
    contract (ops.h, kernels/registry.c with every kernel or only `kernels`); returns the sources to compile there."""
    staged = []
    for path in [*headers(), *files]:
        target = folder / path.relative_to(NATIVE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        if path.suffix == ".c":
            staged.append(target)
    write_generated_c(folder, kernels)
    return [*staged, folder / REGISTRY]


def cache_root() -> Path:
    """`$EDGEPACK_CACHE/native` if set, else the user's cache folder."""
    env = os.environ.get("EDGEPACK_CACHE")
    return (Path(env) if env else Path(platformdirs.user_cache_dir("edgepack"))) / "native"


def compiler() -> str:
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not found:
        raise EdgepackError("no C compiler found to build the cpu runtime core",
                            fix="install one (apt-get install gcc) or set CC")
    return found


def _key(files: list[Path], flags: list[str], cc: str, kernels: dict[str, str] | None,
         per_file: list[str] | None) -> str:
    digest = hashlib.sha256()
    for path in [*files, *headers()]:
        digest.update(path.name.encode() + path.read_bytes())
    for relative, text in generated_c(kernels).items():
        digest.update(relative.encode() + text.encode())
    digest.update(" ".join([cc, *flags]).encode())
    if per_file is not None:
        digest.update("\n".join(per_file).encode())
    return digest.hexdigest()[:16]


def build(name: str, extra_sources: list[Path], flags: list[str], output_flags: list[str], cc: str | None = None,
          kernels: dict[str, str] | None = None, core_files: list[Path] | None = None,
          file_flags: Callable[[str], list[str]] | None = None) -> Path:
    """Compiles the core (plus `extra_sources`) once into `cache_root()/name-<hash>`, atomically; with `kernels`
    (op enum name -> kernel symbol), its registry holds only those, and `core_files` (the core's sources those
    kernels need) replace the whole core's; with `file_flags`, each source (by its path under the core's root) is
    compiled with those flags added. Each source is compiled on its own, in parallel, into an object kept by
    `compiled_object` (cores that differ only in their kernels share all but their registry's), and the objects
    are linked with `flags` and `output_flags`."""
    cc = cc or compiler()
    files = (sources() if core_files is None else core_files) + extra_sources
    compiled = [path.relative_to(NATIVE).as_posix() for path in files] + [REGISTRY]
    per_file = None if file_flags is None else [f"{path}: {' '.join(file_flags(path))}" for path in compiled]
    target = cache_root() / f"{name}-{_key(files, [*STRICT, *flags, *output_flags], cc, kernels, per_file)}"

    def make(temporary: Path) -> None:
        source_root = temporary.parent / "src"
        staged = stage_sources(source_root, files, kernels)
        headers = staged_headers(source_root)

        def compile_one(source: Path) -> str:
            added = file_flags(source.relative_to(source_root).as_posix()) if file_flags else []
            return str(compiled_object([cc, *STRICT, *flags, *added], source, source_root, headers))

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            objects = list(pool.map(compile_one, staged))
        _compile([cc, *flags, *output_flags, "-o", str(temporary), *objects], where=f"linking {name}")

    return cached(target, make)


@functools.cache
def compiler_identity(cc: str) -> str:
    """The first line `cc --version` prints (its name and version), or "" where it prints none."""
    proc = subprocess.run([cc, "--version"], capture_output=True, text=True)
    return proc.stdout.partition("\n")[0]


def staged_headers(source_root: Path) -> str:
    """A hash of every header staged under `source_root` (paths and contents): what any of its sources may include."""
    digest = hashlib.sha256()
    for header in sorted(source_root.rglob("*.h")):
        digest.update(header.relative_to(source_root).as_posix().encode() + b"\0" + header.read_bytes())
    return digest.hexdigest()


def compiled_object(command: list[str], source: Path, source_root: Path, headers: str) -> Path:
    """`source` (staged under `source_root`, whose headers hash to `headers`: staged_headers) compiled by `command`
    (the compiler and its flags) into an object, kept in `cache_root()/objects` under a hash of the compiler's
    version, the command, the source and the headers (an upgraded compiler compiles afresh rather than link its
    objects with the old one's)."""
    digest = hashlib.sha256("\0".join([compiler_identity(command[0]), *command, headers]).encode() + b"\0" +
                            source.read_bytes())
    target = cache_root() / "objects" / f"{source.stem}-{digest.hexdigest()[:20]}.o"
    return cached(target, lambda temporary: _compile([*command, f"-I{source_root}", "-c", "-o", str(temporary),
                                                      str(source)], where=source.relative_to(source_root).as_posix()))


def cached(target: Path, make: Callable[[Path], None]) -> Path:
    """`target` where it is already, else made: `make` writes it at a path in a private folder beside it (where it may
    keep what else it needs), and it is renamed into place, so that no reader ever sees it half written."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        temporary = Path(tmp) / target.name
        make(temporary)
        os.replace(temporary, target)
    return target


def _compile(command: list[str], where: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise EdgepackError(f"building the runtime core failed: {proc.stderr.strip()[:2000]}",
                            where=where, fix="check the C compiler, or report the error")


POOL = NATIVE / "pool" / "ep_pool.c"
"""The thread pool hosts with POSIX threads hand a session (`ep_set_workers`); not part of the freestanding core."""


def release_flags(march: str) -> list[str]:
    """RELEASE with -march=MARCH."""
    return [f"-march={march}" if flag == "-march=native" else flag for flag in RELEASE]


def shared_library(march: str = "native") -> Path:
    """The host library (`-O3 -march=MARCH`, with the thread pool); the `cpu` provider's is -march=native."""
    return build("libedgepack.so" if march == "native" else f"libedgepack-{march}.so", [POOL],
                 [*release_flags(march), "-fPIC"], ["-shared", "-pthread"])


def core_kind(march: str = "native") -> str:
    """The kind of a core compiled here with -march=MARCH (from the compiler's predefined macros), or "default"."""
    defined = subprocess.run([compiler(), f"-march={march}", "-dM", "-E", "-x", "c", "/dev/null"],
                             capture_output=True, text=True, check=True).stdout
    macros = set(re.findall(r"#define (\w+)", defined))
    return next((kind for kind, condition in KINDS.items()
                 if set(re.findall(r"defined\((\w+)\)", condition)) <= macros), "default")


def forced_winograd_library(choice: int, march: str = "native") -> Path:
    """The host library (without the pool) for -march=MARCH compiled to run every 3x3 stride-1 conv it may as
    Winograd (`choice` 1) or none (0), whatever the kernel selection table says: for plans lowered in
    `kernel_choice.winograd_everywhere()`."""
    return build(f"libedgepack-winograd{choice}-{march}.so", [],
                 [*release_flags(march), f"-D{FORCE_MACRO}={choice}", "-fPIC"], ["-shared"])


RUNNER = [NATIVE / "cli" / "ep_run.c", NATIVE / "cli" / "npy.c", POOL]
"""The command-line runner's sources (with the thread pool, for `--threads`); its builds link with -pthread."""
PROFILE = ["-DEP_PROFILE"]
"""The profiling build: the executor times every op, and ep_run prints the times (cli/ep_run.c)."""


def runner(sanitized: bool = False, profile: bool = False) -> Path:
    """The `ep_run` command-line runner (reads an .epk and .npy inputs, writes .npy outputs); with `sanitized`,
    built with AddressSanitizer and UndefinedBehaviorSanitizer; with `profile`, the profiling build."""
    flags = SANITIZED if sanitized else RELEASE + (PROFILE if profile else [])
    name = "ep_run-asan" if sanitized else "ep_run-profile" if profile else "ep_run"
    return build(name, RUNNER, flags, ["-pthread"])


THREAD_SANITIZED = ["-O1", "-g", "-fsanitize=thread"]


def thread_sanitized_runner() -> Path:
    """`ep_run` built with ThreadSanitizer: a race between the workers of a run on several threads (`--threads`)
    fails it."""
    return build("ep_run-tsan", RUNNER, THREAD_SANITIZED, ["-pthread"])


AARCH64_CC = "aarch64-linux-gnu-gcc"
PORTABLE = ["-O3", "-ffp-contract=fast", "-static"]
"""A runner for another machine: static, and for the architecture's baseline (no -march=native)."""


def aarch64_runner(profile: bool = False) -> Path:
    """`ep_run` cross-compiled for ARM64 (NEON through the vector extensions), static, to run under qemu-aarch64 or
    on an ARM64 device; with `profile`, the profiling build."""
    if not shutil.which(AARCH64_CC):
        raise EdgepackError("no aarch64 cross compiler to build the neon runtime core",
                            fix="apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user")
    return build("ep_run-aarch64-profile" if profile else "ep_run-aarch64",
                 RUNNER, PORTABLE + (PROFILE if profile else []), ["-pthread"],
                 cc=AARCH64_CC)


def device_profile_runner(march: str | None) -> Path:
    """The profiling `ep_run` for a machine of this one's architecture: static, for the CPU `march` names (`native`:
    this one; `x86-64-v3`: any with AVX2 and FMA), or for the architecture's baseline."""
    return build(f"ep_run-profile-{march or 'baseline'}", RUNNER,
                 PORTABLE + ([f"-march={march}"] if march else []) + PROFILE, ["-pthread"])


WASM_CC = "clang"
WASM = ["--target=wasm32", "-msimd128", "-mbulk-memory", "-ffp-contract=fast", "-nostdlib"]
WASM_OPTIMIZATION = {
    **dict.fromkeys(("kernels/gemm.c", "kernels/gemm_dot.c", "kernels/conv.c", "kernels/conv_narrow.c",
                      "kernels/padding.c", "kernels/conv_transpose.c", "kernels/depthwise.c"), ["-O2"]),
    **dict.fromkeys((f"kernels/{name}.c" for name in ("matmul", "int8_matmul", "quant", "dequantize", "recurrent",
                                                      "elementwise", "unary", "reduce", "normalize", "resize",
                                                      "pool", "pool_planes")),
                    ["-O2", "-fno-unroll-loops"]),
}
"""How the wasm core's files are compiled, by path; any other file -Os. The micro-kernels and conv loops are -O2
with their fixed-count loops unrolled (without that, ppocr-rec and ppocr-det take twice as long in V8); the other
kernels that a model's latency can depend on are -O2 with their vector loops not unrolled; the loader, executor,
checks and seldom-hot kernels are -Os. On the sample models this is as fast in V8 as -O3 throughout, in two thirds
of the bytes (ppocr-rec's core: 118 KB, 184 KB at -O3)."""
WASM_EXPORTS = ["ep_required_bytes", "ep_open", "ep_open_error", "ep_run", "ep_error", "ep_input_count",
                "ep_output_count", "ep_input", "ep_output", "ep_status_name", "__heap_base"]
WASM_THREADS = ["-matomics", "-mmutable-globals"]
"""The threaded core's flags beside WASM: atomics (and shared memory), and a stack pointer a worker may set."""
WASM_THREADS_LINK = ["--shared-memory", "--import-memory", f"--initial-memory={16 << 16}",
                     f"--max-memory={32768 << 16}", f"-zstack-size={4 << 16}"]
"""The threaded core imports its memory (env.memory, shared, 16 to 32768 pages: core.js's THREADED_MEMORY makes it)
and keeps a 256 KiB stack for the page's thread; each worker gets one as big (core.js: __heap_base - __data_end)."""
WASM_THREADS_EXPORTS = ["ep_wasm_threads", "ep_wasm_worker", "ep_worker_scratch_bytes", "__stack_pointer",
                        "__data_end"]
WASM_GLUE = NATIVE / "wasm" / "ep_run.mjs"
"""The node glue: `node ep_run.mjs [--threads N] CORE.wasm PLAN.epk OUT_DIR INPUT.npy...`, like the native ep_run, or
`node ep_run.mjs CORE.wasm --serve`, a run per line of stdin (emulated.RunnerServer)."""


def wasm_optimization(path: str) -> list[str]:
    """The optimization flags of one wasm core file (WASM_OPTIMIZATION, else -Os)."""
    return WASM_OPTIMIZATION.get(path, ["-Os"])


def wasm_core(kernels: dict[str, str] | None = None, core_files: list[Path] | None = None,
              threads: bool = False) -> Path:
    """The core as a freestanding wasm32 module with SIMD128 (no emscripten, no libc: wasm/libc.c has the three
    memory functions the compiler calls), its hot kernels built for speed and the rest for size
    (`WASM_OPTIMIZATION`); with `kernels` (op enum name -> kernel symbol) and the `core_files` they need, a core for
    those ops only: its registry names no other kernel, and no other kernel is compiled. With `threads`, the threaded
    core: atomics, a shared imported memory and wasm/pool.c, whose workers are instances of it on that memory. The
    module is linked stripped (--strip-all): its function names (the name section, 2 to 3 KB) would only label a
    browser's stack traces, and a page fetches every byte of it."""
    if not shutil.which(WASM_CC) or not shutil.which("wasm-ld"):
        raise EdgepackError("clang and lld are needed to build the wasm runtime core",
                            fix="apt-get install clang lld")
    exports = WASM_EXPORTS + (WASM_THREADS_EXPORTS if threads else [])
    link = ["-Wl,--no-entry", "-Wl,--strip-all", *(f"-Wl,--export={name}" for name in exports),
            *(f"-Wl,{flag}" for flag in (WASM_THREADS_LINK if threads else []))]
    extra = [NATIVE / "wasm" / "libc.c", *([NATIVE / "wasm" / "pool.c"] if threads else [])]
    return build("core-threads.wasm" if threads else "core.wasm", extra, WASM + (WASM_THREADS if threads else []),
                 link, cc=WASM_CC, kernels=kernels, core_files=core_files, file_flags=wasm_optimization)


LIBFUZZER = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=fuzzer,address,undefined",
             "-fno-sanitize-recover=all"]


def libfuzzer() -> Path:
    """The coverage-guided fuzzer of the plan loader (libFuzzer, with AddressSanitizer and
    UndefinedBehaviorSanitizer), built with clang; with EP_FUZZ_RUN set, it also runs every plan the loader accepts."""
    if not shutil.which("clang"):
        raise EdgepackError("clang is needed to build the libFuzzer target",
                            fix="apt-get install clang libclang-rt-dev")
    return build("ep_libfuzzer", [NATIVE / "cli" / "ep_libfuzzer.c"], LIBFUZZER, [], cc="clang")


def fuzzer() -> Path:
    """The mutation fuzzer harness, built with AddressSanitizer and UndefinedBehaviorSanitizer."""
    return build("ep_fuzz-asan", [NATIVE / "cli" / "ep_fuzz.c"], SANITIZED, [])
