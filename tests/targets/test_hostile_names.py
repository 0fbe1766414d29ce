"""Names that try to break out of generated code: inputs and outputs named with quotes, a newline, `*/`, `\"\"\"`,
backslashes, a `${` template, non-ASCII, a language keyword, and two names that collide once cleaned, in a model
whose file is named `class.onnx`. The C library's header and example compile (cc) and run, the web bundle's
index.js is valid JavaScript (node --check) and its index.d.ts type-checks with a program that uses every name
(tsc --strict), and the Swift package parses (tree-sitter). (The Java API is compiled with the same names in
tests/targets/mobile/android.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import edgepack
from edgepack.runtime import Session
from edgepack.runtime.native.build import cache_root
from edgepack.targets.embedded.example_run import build_example, read_library, run_example

INPUT = 'in"put\n*/\\ü ${x} """'
OUTPUTS = ["class", "out.put", "out_put", 'end */ "quoted" \\ \u2028']


def hostile_model(folder: Path) -> Path:
    nodes = [helper.make_node(op, [INPUT], [name], name=f"n{index}")
             for index, (op, name) in enumerate(zip(["Relu", "Neg", "Abs", "Sigmoid"], OUTPUTS))]
    graph = helper.make_graph(nodes, 'g"*/\n', [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, [1, 6])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 6]) for name in OUTPUTS])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    path = folder / "class.onnx"
    onnx.save(model, path)
    return path


FEEDS = {INPUT: np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 6)}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_model(tmp_path_factory.mktemp("hostile"))


def test_the_c_library_compiles_and_runs(source: Path, tmp_path: Path) -> None:
    if not shutil.which("cc") or not shutil.which("qemu-aarch64"):
        pytest.skip("needs cc and qemu-aarch64")
    bundle = edgepack.build(source, "raspberry-pi", tmp_path / "dist", sample_inputs=[FEEDS]).bundle_dir
    library = read_library(bundle)
    outputs = run_example(library, build_example(library, tmp_path / "build"), FEEDS).outputs
    expected = Session(bundle, providers=["reference"]).run(FEEDS)
    assert set(outputs) == set(OUTPUTS)
    for name in OUTPUTS:
        np.testing.assert_allclose(outputs[name], expected[name], atol=1e-5)
    native = build_example(library, tmp_path / "native", native=True)  # the host compiler too, -Wall -Wextra
    assert native.is_file()


def typescript() -> Path | None:
    """tsc from npm, installed into edgepack's cache on first use (beside onnxruntime-web)."""
    folder = cache_root().parent / "bench-node"
    tsc = folder / "node_modules" / "typescript" / "bin" / "tsc"
    if not tsc.is_file() and shutil.which("npm"):
        subprocess.run(["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error",
                        "typescript@5"], capture_output=True)
    return tsc if tsc.is_file() else None


@pytest.mark.skipif(not shutil.which("node"), reason="needs node")
def test_the_web_bundle_is_valid_javascript_and_its_types_check(source: Path, tmp_path: Path) -> None:
    bundle = edgepack.build(source, "web", tmp_path / "dist", sample_inputs=[FEEDS], verify=False).bundle_dir
    checked = subprocess.run(["node", "--check", str(bundle / "index.js")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    tsc = typescript()
    if tsc is None:
        pytest.skip("typescript cannot be installed (no npm, or no registry)")
    usage = bundle / "use.ts"
    reads = "\n".join(f"const out{index}: Float32Array = outputs[{json.dumps(name)}].data;"
                      for index, name in enumerate(OUTPUTS))
    usage.write_text(f"""import {{ createSession, type Inputs, type Outputs }} from "./index.js";
const inputs: Inputs = {{ {json.dumps(INPUT)}: {{ data: new Float32Array(6), dims: [1, 6] }} }};
export async function main(): Promise<number> {{
  const session = await createSession();
  const outputs: Outputs = await session.run(inputs);
  {reads}
  return {' + '.join(f'out{index}.length' for index in range(len(OUTPUTS)))};
}}
""")
    proc = subprocess.run(["node", str(tsc), "--strict", "--noEmit", "--target", "es2022", "--module", "nodenext",
                           "--moduleResolution", "nodenext", "--allowJs", "false", str(usage)],
                          capture_output=True, text=True, cwd=bundle)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_swift_package_parses(source: Path, tmp_path: Path) -> None:
    tree_sitter = pytest.importorskip("tree_sitter")
    tree_sitter_swift = pytest.importorskip("tree_sitter_swift")
    bundle = edgepack.build(source, "iphone", tmp_path / "dist", sample_inputs=[FEEDS], verify=False).bundle_dir
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_swift.language()))

    def errors(node) -> list[str]:
        found = [f"line {node.start_point[0] + 1}"] if node.type == "ERROR" or node.is_missing else []
        return found + [error for child in node.children for error in errors(child)]

    files = sorted(bundle.rglob("*.swift"))
    assert len(files) >= 4
    for path in files:
        assert errors(parser.parse(path.read_bytes()).root_node) == [], path
    swift = "".join(path.read_text() for path in files)
    assert "\\u{a}" in swift and "\\u{2028}" in swift  # the newline and the line separator, escaped
