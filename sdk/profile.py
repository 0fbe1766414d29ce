"""Device profiles: TOML files with a validated schema. `load_profile("iphone")` or a path to a .toml."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from edgepack.packager.profile import ACTIVATION_PRECISIONS, MAX_OPSET, MIN_OPSET, WEIGHT_PRECISIONS, Profile
from edgepack.runtime.errors import EdgepackError
from edgepack.runtime.providers import PROVIDERS


# The schema: table -> key -> (checker, description of allowed values).
def _one_of(options: tuple[str, ...]):
    return (lambda v: isinstance(v, str) and v in options), "one of " + ", ".join(repr(o) for o in options)


def _providers(v: Any) -> bool:
    return isinstance(v, list) and len(v) > 0 and all(isinstance(p, str) and p in PROVIDERS for p in v) \
        and len(set(v)) == len(v)


def _deployment_targets() -> tuple[str, ...]:
    """The CoreML provider's deployment targets, read when a profile names one."""
    from edgepack.runtime.providers.coreml.convert import DEPLOYMENT_TARGETS

    return DEPLOYMENT_TARGETS


def _deployment_target(v: Any) -> bool:
    return isinstance(v, str) and v in _deployment_targets()


def _opset(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and MIN_OPSET <= v <= MAX_OPSET


def _positive(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and v > 0


def _fraction(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1


def _shape_table(v: Any) -> bool:
    return isinstance(v, dict) and all(
        isinstance(s, list) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in s)
        for s in v.values())


def _dim_table(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in v.values())


def _text(v: Any) -> bool:
    return isinstance(v, str) and len(v) > 0


SCHEMA: dict[str, dict[str, tuple[Any, str]]] = {
    "": {
        "name": (_text, "a non-empty string"),
        "description": (_text, "a non-empty string"),
        "target": (_text, "a target name (`edgepack profiles` lists those this version builds)"),
        "providers": (_providers, "a non-empty list without repeats of " + ", ".join(repr(p) for p in PROVIDERS)),
    },
    "precision": {"weights": _one_of(WEIGHT_PRECISIONS), "activations": _one_of(ACTIVATION_PRECISIONS)},
    "opset": {"min": (_opset, f"an integer from {MIN_OPSET} to {MAX_OPSET}"),
              "max": (_opset, f"an integer from {MIN_OPSET} to {MAX_OPSET}")},
    "shapes": {"inputs": (_shape_table, "a table of input name = [positive integers]"),
               "dims": (_dim_table, "a table of symbolic dimension name = positive integer")},
    "budgets": {"bundle_mb": (_positive, "a positive number"), "peak_memory_mb": (_positive, "a positive number")},
    "fidelity": {"min_cosine": (_fraction, "a number from 0 to 1"),
                 "min_cosine_int8": (_fraction, "a number from 0 to 1"),
                 "min_cosine_int4": (_fraction, "a number from 0 to 1"),
                 "max_abs_diff": (_positive, "a positive number")},
    "coreml": {"deployment_target": (_deployment_target,
                                     lambda: "one of " + ", ".join(repr(t) for t in _deployment_targets()))},
}
REQUIRED = ("name", "target", "providers")


def builtin_names() -> list[str]:
    return sorted(p.name.removesuffix(".toml") for p in resources.files("edgepack").joinpath("profiles").iterdir()
                  if p.name.endswith(".toml"))


def load_profile(name_or_path: str | Path) -> Profile:
    """A built-in profile by name, or a profile from a .toml file."""
    text, source = _read(name_or_path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EdgepackError(f"the profile is not valid TOML: {exc}", where=source,
                            fix="fix the TOML syntax (see the built-in profiles in edgepack/profiles/)") from exc
    return _validate(data, source)


def _read(name_or_path: str | Path) -> tuple[str, str]:
    text_name = str(name_or_path)
    if text_name.endswith(".toml") or "/" in text_name or isinstance(name_or_path, Path):
        path = Path(name_or_path)
        if not path.is_file():
            raise EdgepackError(f"profile file {str(path)!r} does not exist", where=str(path.absolute()),
                                fix="pass an existing .toml file or a built-in profile name: "
                                    + ", ".join(builtin_names()))
        return path.read_text(encoding="utf-8"), str(path)
    if text_name not in builtin_names():
        raise EdgepackError(f"unknown profile {text_name!r}",
                            fix=f"use a built-in profile ({', '.join(builtin_names())}) or a path to a .toml file; "
                                "`edgepack profiles` lists them")
    resource = resources.files("edgepack").joinpath("profiles", f"{text_name}.toml")
    return resource.read_text(encoding="utf-8"), f"builtin:{text_name}"


def _validate(data: dict[str, Any], source: str) -> Profile:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in SCHEMA and key != "":
            if not isinstance(value, dict):
                raise EdgepackError(f"profile key [{key}] must be a table", where=source,
                                    fix=f"write it as a [{key}] section with keys {', '.join(SCHEMA[key])}")
            for sub, sub_value in value.items():
                _check(SCHEMA[key], sub, sub_value, f"{key}.{sub}", source)
                flat[f"{key}.{sub}"] = sub_value
        else:
            _check(SCHEMA[""], key, value, key, source)
            flat[key] = value
    for key in REQUIRED:
        if key not in flat:
            raise EdgepackError(f"profile has no {key!r}", where=source, fix=f"add `{key} = ...` at the top level")
    opset_min = flat.get("opset.min", MIN_OPSET)
    opset_max = flat.get("opset.max", MAX_OPSET)
    if opset_min > opset_max:
        raise EdgepackError(f"profile opset.min ({opset_min}) is above opset.max ({opset_max})", where=source,
                            fix="make opset.min <= opset.max")
    return Profile(
        name=flat["name"],
        description=flat.get("description", ""),
        target=flat["target"],
        providers=tuple(flat["providers"]),
        weights=flat.get("precision.weights", "fp32"),
        activations=flat.get("precision.activations", "fp32"),
        opset_min=opset_min,
        opset_max=opset_max,
        input_shapes={k: tuple(v) for k, v in flat.get("shapes.inputs", {}).items()},
        dims=dict(flat.get("shapes.dims", {})),
        bundle_mb=flat.get("budgets.bundle_mb"),
        peak_memory_mb=flat.get("budgets.peak_memory_mb"),
        min_cosine=flat.get("fidelity.min_cosine", 0.999),
        min_cosine_int8=flat.get("fidelity.min_cosine_int8", 0.99),
        min_cosine_int4=flat.get("fidelity.min_cosine_int4", 0.9),
        max_abs_diff=flat.get("fidelity.max_abs_diff"),
        deployment_target=flat.get("coreml.deployment_target", "iOS16"),
        source=source,
    )


def _check(table: dict[str, tuple[Any, str]], key: str, value: Any, dotted: str, source: str) -> None:
    if key not in table:
        allowed = [k for k in table] + ([f"[{t}]" for t in SCHEMA if t] if table is SCHEMA[""] else [])
        raise EdgepackError(f"unknown profile key {dotted!r}", where=source,
                            fix=f"allowed keys here are: {', '.join(allowed)}")
    check, allowed_values = table[key]
    if not check(value):
        allowed = allowed_values() if callable(allowed_values) else allowed_values
        raise EdgepackError(f"profile key {dotted!r} has the bad value {value!r}", where=source,
                            fix=f"it must be {allowed}")
