"""The android libraries' object cache: an object is reused only where its source, every header it includes
(transitively), the ABI and the flags are the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgepack.targets.mobile.android import native


@pytest.fixture
def sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if reason := native.missing_tools():
        pytest.skip(reason)
    monkeypatch.setenv("EDGEPACK_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "src"
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "outer.h").write_text('#include "inner.h"\n')
    (folder / "inner.h").write_text("#define SCALE 2\n")
    (folder / "kernel.c").write_text('#include "outer.h"\nint Java_scaled(int x) { return SCALE * x; }\n')
    (folder / "other.c").write_text("int Java_other(int x) { return x + 1; }\n")
    return folder


def test_an_object_is_reused_until_a_header_it_includes_changes(sources: Path) -> None:
    abi, includes = native.ABIS[0], [sources, sources / "include"]
    first = native._object(abi, sources / "kernel.c", includes)
    other = native._object(abi, sources / "other.c", includes)
    assert native._object(abi, sources / "kernel.c", includes) == first
    (sources / "inner.h").write_text("#define SCALE 3\n")
    changed = native._object(abi, sources / "kernel.c", includes)
    assert changed != first and changed.read_bytes() != first.read_bytes()
    assert native._object(abi, sources / "other.c", includes) == other
    assert native._object(native.ABIS[2], sources / "other.c", includes) != other


def test_a_library_links_from_cached_objects_and_passes_the_load_checks(sources: Path, tmp_path: Path) -> None:
    files = [sources / "kernel.c", sources / "other.c"]
    for abi in native.ABIS:
        library = native.build(abi, files, [sources, sources / "include"], tmp_path / abi.name / "libk.so")
        assert native.check(library, abi) == []
    assert len(list((tmp_path / "cache" / "native" / "android").glob("*.o"))) == 2 * len(native.ABIS)
