"""The core's builds: each source compiled into an object kept under a hash of what it was compiled from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgepack.runtime.native import build

pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")


@pytest.fixture
def staged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EDGEPACK_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "src"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "scale.h").write_text("#define SCALE 3\n")
    (root / "kernels" / "scale.c").write_text('#include "kernels/scale.h"\nint scale(int x) { return SCALE * x; }\n')
    return root


def compile_scale(root: Path, flags: list[str]) -> Path:
    return build.compiled_object([build.compiler(), *build.STRICT, *flags], root / "kernels" / "scale.c", root,
                                 build.staged_headers(root))


def test_an_object_is_kept_and_remade_only_when_its_source_a_header_or_a_flag_changes(staged: Path) -> None:
    first = compile_scale(staged, ["-O2"])
    assert first.is_file() and first.parent == build.cache_root() / "objects"
    modified = first.stat().st_mtime_ns
    assert compile_scale(staged, ["-O2"]) == first and first.stat().st_mtime_ns == modified
    assert compile_scale(staged, ["-O1"]) != first
    (staged / "kernels" / "scale.h").write_text("#define SCALE 4\n")
    by_header = compile_scale(staged, ["-O2"])
    assert by_header != first and by_header.read_bytes() != first.read_bytes()
    (staged / "kernels" / "scale.c").write_text('#include "kernels/scale.h"\nint scale(int x) { return x; }\n')
    assert compile_scale(staged, ["-O2"]) not in (first, by_header)


def test_another_compiler_version_compiles_afresh(staged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = compile_scale(staged, ["-O2"])
    monkeypatch.setattr(build, "compiler_identity", lambda cc: "cc (a later release) 99.1")
    assert compile_scale(staged, ["-O2"]) != first


def test_a_source_that_does_not_compile_names_the_compiler_error(staged: Path) -> None:
    (staged / "kernels" / "scale.c").write_text("int scale(int x) { return x }\n")
    with pytest.raises(build.EdgepackError, match="(?s)runtime core failed: .*expected.*at kernels/scale.c"):
        compile_scale(staged, ["-O2"])
    assert not list((build.cache_root() / "objects").glob("scale-*.o"))
