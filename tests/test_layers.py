"""The import contract: layers import downwards only (sdk -> targets -> packager -> runtime), and an app that runs
bundles loads no packager, target or build code."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"sdk": 3, "samples": 3, "targets": 2, "packager": 1, "runtime": 0}
"""Source folder -> rank: a module may import modules of its own rank or lower."""
PACKAGE_OF = {"sdk": "edgepack", "samples": "edgepack.samples", "targets": "edgepack.targets",
              "packager": "edgepack.packager", "runtime": "edgepack.runtime"}


def layer_of(module: str) -> str:
    """The source folder a dotted `edgepack` module lives in."""
    for folder in ("samples", "targets", "packager", "runtime"):
        if module == PACKAGE_OF[folder] or module.startswith(PACKAGE_OF[folder] + "."):
            return folder
    return "sdk"


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    folder, *parts = path.relative_to(root).with_suffix("").parts
    package = path.name == "__init__.py"
    parts = parts[:-1] if package else parts
    return ".".join([PACKAGE_OF[folder], *parts]), package


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """Every edgepack module `path` imports, at any depth of the file (function-level imports included)."""
    name, package = module_name(path, root)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return [(line, target) for line, target in found if target == "edgepack" or target.startswith("edgepack.")]


def back_edges(root: Path = ROOT) -> list[str]:
    """Each import of a module of a higher layer, as `file:line imports module (from -> to)`."""
    edges = []
    for folder, rank in LAYERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            for line, target in imported_modules(path, root):
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
