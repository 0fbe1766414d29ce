"""The op contract (runtime/native/ops.toml) is the one source of op ids, kinds, weight slots, claims and WGSL files:
every part that must agree on an op is made from it, and no hand-kept copy of it is left anywhere to drift."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edgepack.compiler.emitters import EMITTERS
from edgepack.compiler.lower import LOWERED_IN_PLACE
from edgepack.runtime.native import epk
from edgepack.runtime.native.build import NATIVE
from edgepack.runtime.native.op_contract import (
    c_header,
    c_name,
    contract,
    gpu_kinds,
    js_module,
    write_generated_c,
)
from edgepack.runtime.providers import PROVIDERS
from edgepack.targets.web.gpu_kernels import KERNEL_FILES

REPO = NATIVE.parent.parent
WEB_RUNTIME = REPO / "targets" / "web" / "runtime"
KERNEL_DEFINITION = re.compile(r"^const ep_kernel (ep_kernel_\w+)\s*=", re.MULTILINE)
FOLDED = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "DequantizeLinear"}
"""ONNX ops the lowering folds or turns into weights without an emitter of their own."""


def kernel_definitions() -> dict[str, Path]:
    return {symbol: path for path in (NATIVE / "kernels").glob("*.c")
            for symbol in KERNEL_DEFINITION.findall(path.read_text())}


def test_ids_run_in_order_and_names_make_distinct_c_names() -> None:
    ops = contract().ops
    assert [op.id for op in ops] == list(range(len(ops)))
    assert len({op.c_name for op in ops}) == len(ops)
    assert c_name("ChannelAffine") == "CHANNEL_AFFINE" and c_name("LSTM") == "LSTM"


def test_every_kernel_the_contract_names_is_defined_in_one_kernel_file() -> None:
    defined = kernel_definitions()
    assert [op.kernel for op in contract().ops if op.kernel not in defined] == []


def test_no_c_source_keeps_its_own_op_ids_or_kind_numbers() -> None:
    """ops.h and the registry exist only as generated files: the tree holds neither, nor an enum that repeats them."""
    assert not (NATIVE / "ops.h").exists() and not (NATIVE / "kernels" / "registry.c").exists()
    kind_names = {f"{prefix}{c_name(name)}" for kind, prefix in contract().kind_prefixes.items()
                  for name in contract().kinds[kind]}
    for path in [*NATIVE.rglob("*.c"), *NATIVE.rglob("*.h")]:
        text = path.read_text()
        assert not re.search(r"\bEP_OP_\w+\s*=\s*\d", text), path
        defined = set(re.findall(r"enum\s*\{([^}]*)\}", text))
        assert not {name.strip() for body in defined for name in body.split(",")} & kind_names, path


def test_generated_header_compiles_with_the_kernels_and_matches_the_python_tables(tmp_path: Path) -> None:
    header = c_header()
    ids = {name: int(number) for name, number in re.findall(r"EP_OP_(\w+) = (\d+)", header)}
    assert {name: ids[c_name(name)] for name in epk.OPS} == epk.OPS
    assert re.search(r"enum \{ B_ADD, B_SUB, .* B_MOD(, B_\w+)*, B_KINDS \};", header)
    assert list(epk.BINARY) == list(contract().kinds["Binary"])
    write_generated_c(tmp_path)
    registry = (tmp_path / "kernels" / "registry.c").read_text()
    assert set(re.findall(r"\[EP_OP_(\w+)\] = &(\w+)", registry)) == {(op.c_name, op.kernel) for op in contract().ops}


def test_js_module_agrees_with_the_contract_and_no_js_file_keeps_its_own_copy(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    (tmp_path / "ops.js").write_text(js_module())
    shutil.copyfile(WEB_RUNTIME / "epk.js", tmp_path / "epk.js")
    script = ("import { OPS, DTYPE_NAMES } from './epk.js'; import { OP_FILES, WEIGHT_SLOTS } from './ops.js';"
              "console.log(JSON.stringify({ OPS, DTYPE_NAMES, OP_FILES, WEIGHT_SLOTS }));")
    (tmp_path / "probe.mjs").write_text(script)
    seen = json.loads(subprocess.run([node, str(tmp_path / "probe.mjs")], capture_output=True, text=True,
                                     check=True).stdout)
    assert seen["OPS"] == list(epk.OPS)
    assert {int(code): name for code, name in seen["DTYPE_NAMES"].items()} == \
        {code: name for name, code in epk.DTYPES.items()}
    assert {op: (["common.wgsl", *files] if files else []) for op, files in seen["OP_FILES"].items()} == \
        {op: list(files) for op, files in KERNEL_FILES.items()}
    assert all((WEB_RUNTIME / "kernels" / file).is_file() for files in KERNEL_FILES.values() for file in files)
    for path in [*WEB_RUNTIME.glob("*.js"), *(NATIVE / "wasm").glob("*.*js"), *(REPO / "benchmarks").rglob("*.mjs")]:
        text = path.read_text()
        assert '"ChannelAffine"' not in text and "INFO_BYTES" not in text or path.name == "core.js", path


def test_claims_cover_exactly_what_the_lowering_emits() -> None:
    claimed = {name for claim, _ in contract().claims() for name in claim.onnx}
    lowered = set(EMITTERS) | set(LOWERED_IN_PLACE) | FOLDED
    assert claimed - lowered == set()
    assert set(PROVIDERS["cpu"].capability.claims) == {("", name) for name in claimed}
    assert set(PROVIDERS["neon"].capability.claims) == set(PROVIDERS["wasm"].capability.claims) == \
        set(PROVIDERS["cpu"].capability.claims)


def test_webgpu_claims_follow_the_contract() -> None:
    gpu = {name for _, name in PROVIDERS["webgpu"].capability.claims}
    assert {"Conv", "Add", "Relu", "Resize", "Reshape"} <= gpu
    assert not {"Mod", "Equal", "Not", "Gather", "Where", "LSTM"} & gpu
    on_gpu = {name for claim, op in contract().claims() if op is not None and op.gpu and claim.gpu is True
              for name in claim.onnx}
    weight_chains = {name for claim, _ in contract().claims() if claim.gpu == "constants" for name in claim.onnx}
    assert gpu == on_gpu | weight_chains
    binary, unary = (contract().kinds[k] for k in ("Binary", "Unary"))
    binary_on_gpu = [binary[i] for i in gpu_kinds(contract().op("Binary"), "Binary")]
    unary_on_gpu = {unary[i] for i in gpu_kinds(contract().op("Unary"), "Unary")}
    assert binary_on_gpu == ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"]
    assert {"Relu", "Gelu", "GeluTanh", "Clip"} <= unary_on_gpu and not {"Not", "Sin", "IsNaN"} & unary_on_gpu


def test_epk_md_refers_to_the_contract_and_keeps_no_op_table() -> None:
    text = (NATIVE / "EPK.md").read_text()
    assert "ops.toml" in text
    assert not re.search(r"^\| *\d+ *\| *(Copy|Binary|Conv) *\|", text, re.MULTILINE)


def test_the_c_dtype_enum_and_core_dtypes_agree_with_the_contract() -> None:
    """edgepack.h's ep_dtype codes are the contract's [dtypes]; ep_core_dtype (dtype.c) accepts the `held` set."""
    enum = (NATIVE / "include" / "edgepack.h").read_text()
    declared = enum.split("typedef enum ep_dtype")[1].split("}")[0]
    codes = {int(code) for code in re.findall(r"\bEP_\w+ = (\d+)", declared)}
    assert codes == set(epk.DTYPES.values())
    body = (NATIVE / "dtype.c").read_text().split("int ep_core_dtype")[1].split("}")[0]
    names = {name: code for name, code in re.findall(r"\b(EP_\w+) = (\d+)", enum)}
    assert {int(names[name]) for name in re.findall(r"\bEP_\w+", body)} == \
        {epk.DTYPES[name] for name in contract().core_dtypes}
