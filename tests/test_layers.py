"""The import contract: layers import downwards only (sdk -> targets -> packager -> compiler -> runtime), and an app
that runs bundles loads no packager, compiler, target or build code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"sdk": 4, "samples": 4, "targets": 3, "packager": 2, "compiler": 1, "runtime": 0}
"""Source folder -> rank: a module may import modules of its own rank or lower."""
PACKAGE_OF = {"sdk": "edgepack", "samples": "edgepack.samples", "targets": "edgepack.targets",
              "packager": "edgepack.packager", "compiler": "edgepack.compiler", "runtime": "edgepack.runtime"}


def layer_of(module: str) -> str:
    """The source folder a dotted `edgepack` module lives in."""
    for folder in ("samples", "targets", "packager", "compiler", "runtime"):
        if module == PACKAGE_OF[folder] or module.startswith(PACKAGE_OF[folder] + "."):
            return folder
    return "sdk"


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    folder, *parts = path.relative_to(root).with_suffix("").parts
    package = path.name == "__init__.py"
    parts = parts[:-1] if package else parts
    return ".".join([PACKAGE_OF[folder], *parts]), package


def imports(tree: ast.Module, name: str, package: bool) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of each edgepack import in `tree`, the module of `name` (a package when `package`), at
    any depth (function-level imports included), relative imports resolved."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                parts = name.split(".")[: len(name.split(".")) - node.level + (1 if package else 0)]
                module = ".".join(parts + ([node.module] if node.module else []))
            found.append((node.lineno, module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
    return [(line, module, names) for line, module, names in found
            if module == "edgepack" or module.startswith("edgepack.")]


def back_edges(root: Path = ROOT) -> list[str]:
    """Each import of a module of a higher layer, as `file:line imports module (from -> to)`."""
    edges = []
    for folder, rank in LAYERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            for line, target, _ in imports(ast.parse(path.read_text()), *module_name(path, root)):
                if LAYERS[layer_of(target)] > rank:
                    edges.append(f"{path.relative_to(root)}:{line} imports {target} ({folder} -> {layer_of(target)})")
    return edges


def test_layers_import_downwards_only() -> None:
    assert back_edges() == []


def test_planted_back_edges_are_found(tmp_path: Path) -> None:
    (tmp_path / "runtime" / "providers").mkdir(parents=True)
    (tmp_path / "runtime" / "providers" / "planted.py").write_text("def f():\n    from edgepack.build import build\n")
    (tmp_path / "packager").mkdir()
    (tmp_path / "packager" / "planted.py").write_text("from ..targets import TARGETS\n")
    assert back_edges(tmp_path) == ["packager/planted.py:1 imports edgepack.targets (packager -> targets)",
                                    "runtime/providers/planted.py:2 imports edgepack.build (runtime -> sdk)"]


def test_running_a_bundle_loads_no_packager_target_or_build_code() -> None:
    code = ("import sys; from edgepack.runtime import Session; "
            "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('edgepack', 'onnxscript', 'onnxslim', 'onnx_ir', 'sympy', 'openvino', 'coremltools', 'onnxruntime'))))")
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    assert all(module.startswith("edgepack.runtime") or module == "edgepack" for module in loaded), loaded
    assert "edgepack.runtime.session" in loaded


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """edgepack module -> the edgepack modules it imports anywhere in its file (function-level imports included,
    `if TYPE_CHECKING:` blocks not), less a package's imports of its own submodules (registration)."""
    files = {module_name(path, root)[0]: path for folder in LAYERS for path in (root / folder).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = path.name == "__init__.py"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                node.body = []
        edges = set()
        for _, module, names in imports(tree, name, package):
            for target in [module, *(f"{module}.{n}" for n in names)]:
                candidates = [target] if target in files else []
                edges.update(candidates or [m for m in files if target.startswith(m + ".") or m == target])
        graph[name] = {edge for edge in edges if edge != name
                       and not (package and edge.startswith(name + ".") and edge.count(".") == name.count(".") + 1)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules that import each other (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for edge in sorted(graph.get(module, ())):
            if edge not in index:
                visit(edge)
                low[module] = min(low[module], low[edge])
            elif edge in stack:
                low[module] = min(low[module], index[edge])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                found.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []


def test_an_import_circle_is_found(tmp_path: Path) -> None:
    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "__init__.py").write_text("")
    (tmp_path / "compiler" / "lower.py").write_text("def f():\n    from .emitters import EMITTERS\n")
    (tmp_path / "compiler" / "emitters.py").write_text("from .lower import Lowering\n")
    assert cycles(import_graph(tmp_path)) == [["edgepack.compiler.emitters", "edgepack.compiler.lower"]]
