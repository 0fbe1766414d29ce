"""Profiles: the built-ins load, a user's .toml works the same, and the schema names bad keys and values."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgepack import EdgepackError, load_profile
from edgepack.profile import builtin_names
from edgepack.targets.mobile.android.bundle import missing_tools as android_tools_missing

BUILTINS = ["android", "generic", "intel-nuc", "iphone", "raspberry-pi", "web"]


def test_builtin_profiles_are_all_there_and_valid() -> None:
    assert builtin_names() == BUILTINS
    for name in BUILTINS:
        profile = load_profile(name)
        assert profile.name == name
        assert profile.providers
        assert profile.opset_min <= profile.opset_max


def test_iphone_profile_targets_coreml_first() -> None:
    profile = load_profile("iphone")
    assert (profile.target, profile.providers[0], profile.weights) == ("ios", "coreml", "fp16")
    assert profile.dims == {"batch": 1}


def test_user_profile_file(tmp_path: Path) -> None:
    path = tmp_path / "board.toml"
    path.write_text('name = "board"\ntarget = "generic"\nproviders = ["reference"]\n'
                    '[shapes.inputs]\nx = [1, 3, 64, 64]\n[fidelity]\nmin_cosine = 0.99\n')
    profile = load_profile(path)
    assert profile.input_shapes == {"x": (1, 3, 64, 64)}
    assert profile.min_cosine == 0.99
    assert profile.source == str(path)


@pytest.mark.parametrize(("weights", "activations", "required"), [
    ("fp32", "fp32", 0.9995), ("fp16", "fp16", 0.9995), ("int8", "fp32", 0.98), ("int8", "int8", 0.98),
    ("int4", "fp32", 0.8)])
def test_each_number_format_is_held_to_its_own_tolerance(tmp_path: Path, weights: str, activations: str,
                                                          required: float) -> None:
    path = tmp_path / "board.toml"
    path.write_text(f'name = "board"\ntarget = "generic"\nproviders = ["reference"]\n[precision]\n'
                    f'weights = "{weights}"\nactivations = "{activations}"\n[fidelity]\nmin_cosine = 0.9995\n'
                    'min_cosine_int8 = 0.98\nmin_cosine_int4 = 0.8\n')
    assert load_profile(path).required_cosine == required


@pytest.mark.parametrize(("body", "fragments"), [
    ('name="p"\ntarget="generic"\nproviders=["reference"]\ncolour="red"\n',
     ["unknown profile key 'colour'", "name, description, target, providers, [precision]"]),
    ('name="p"\ntarget="generic"\nproviders=["reference"]\n[precision]\nweights="int3"\n',
     ["'precision.weights' has the bad value 'int3'", "'fp32', 'fp16', 'int8', 'int4'"]),
    ('name="p"\ntarget="generic"\nproviders=["tpu"]\n', ["'providers' has the bad value ['tpu']", "'coreml'"]),
    ('name="p"\ntarget="generic"\nproviders=["reference"]\n[opset]\nmin=30\n', ["'opset.min'", "from 7 to 23"]),
    ('name="p"\ntarget="generic"\nproviders=["reference"]\n[opset]\nmin=20\nmax=13\n', ["opset.min (20) is above"]),
    ('name="p"\ntarget="generic"\n', ["profile has no 'providers'"]),
    ('name="p"\ntarget="generic"\nproviders=["reference"]\n[shapes.inputs]\nx=[1,-3]\n', ["'shapes.inputs'"]),
    ('name = \n', ["not valid TOML"]),
])
def test_bad_profiles_name_the_key_and_allowed_values(tmp_path: Path, body: str, fragments: list[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(EdgepackError) as info:
        load_profile(path)
    for fragment in fragments:
        assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_unknown_builtin_name_lists_the_builtins() -> None:
    with pytest.raises(EdgepackError, match="unknown profile 'ipone'.*generic, intel-nuc, iphone"):
        load_profile("ipone")


def test_profiles_command_marks_availability(cli) -> None:
    import json

    result = cli("profiles", "--json")
    rows = {row["name"]: row for row in json.loads(result.out)}
    assert sorted(rows) == BUILTINS
    assert rows["generic"]["available"] is True
    assert rows["iphone"]["available"] is True
    assert rows["android"]["available"] is (android_tools_missing() is None)


def test_profiles_command_says_what_a_target_lacks_here(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("clang", "ld.lld"):
        (tools / tool).symlink_to(shutil.which(tool) or "/bin/false")
    monkeypatch.setenv("PATH", str(tools))
    rows = {row["name"]: row for row in json.loads(cli("profiles", "--json").out)}
    assert rows["android"]["available"] is False
    assert "javac compiles the AAR's classes.jar" in rows["android"]["unavailable_because"]
    (tools / "clang").unlink()
    (tools / "javac").symlink_to("/bin/true")
    rows = {row["name"]: row for row in json.loads(cli("profiles", "--json").out)}
    assert "clang and lld build its native libraries" in rows["android"]["unavailable_because"]


def test_profile_lists_take_commas_repeats_and_all() -> None:
    from edgepack.build_checks import target_available
    from edgepack.cli import profile_list
    from edgepack.profile import builtin_names, load_profile

    assert profile_list(["web,iphone", "web", " generic "]) == ["web", "iphone", "generic"]
    buildable = [name for name in builtin_names() if target_available(load_profile(name)) is None]
    assert profile_list(["all"]) == buildable and "generic" in buildable
