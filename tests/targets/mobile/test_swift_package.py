"""The Swift package of `--profile iphone`: its layout, its Swift sources parse (tree-sitter's Swift grammar: no
Swift toolchain installs on Linux here), Package.swift declares what the sources need, the README's snippet calls the
generated API, and the stored XCTest data is the sample input and the source model's output on it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from edgepack import samples
from edgepack.runtime import Session
from edgepack.targets.mobile.swift_api import SWIFT_VALUES, member_name, type_name

from .ios_builds import IosBuilds

tree_sitter = pytest.importorskip("tree_sitter")
tree_sitter_swift = pytest.importorskip("tree_sitter_swift")


def swift_tree(path: Path):
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_swift.language()))
    return parser.parse(path.read_bytes())


def errors(node) -> list[str]:
    """Positions of the syntax errors under `node`."""
    found = [f"line {node.start_point[0] + 1}: {node.type}"] if node.type == "ERROR" or node.is_missing else []
    for child in node.children:
        found += errors(child)
    return found


def test_parser_finds_a_syntax_error(tmp_path: Path) -> None:
    broken = tmp_path / "Broken.swift"
    broken.write_text("public func f(x: [Float] async throws -> Int { return 1 }\n")
    assert errors(swift_tree(broken).root_node)


@pytest.mark.parametrize("name", ["tiny-cnn", "tiny-if"])
def test_every_swift_file_parses(ios_builds: IosBuilds, name: str) -> None:
    bundle = ios_builds.bundle(name)
    files = sorted(bundle.rglob("*.swift"))
    assert {f.name for f in files} >= {"Package.swift", "EdgepackTensor.swift", "CoreMLStep.swift",
                                       f"{type_name(name)}.swift", f"{type_name(name)}Tests.swift"}
    for path in files:
        assert errors(swift_tree(path).root_node) == [], path


def package_declarations(bundle: Path) -> dict[str, object]:
    text = (bundle / "Package.swift").read_text()
    targets = re.findall(r'\.(target|testTarget)\(name: "(\w+)"(?:, dependencies: \[([^\]]*)\])?, path: "([^"]+)"',
                         text)
    return {"tools": re.search(r"swift-tools-version:(\S+)", text).group(1),
            "platforms": re.search(r"platforms: \[(.*?)\]", text).group(1),
            "products": re.findall(r'\.library\(name: "(\w+)", targets: \["(\w+)"\]\)', text),
            "targets": {t[1]: {"kind": t[0], "dependencies": re.findall(r'"(\w+)"', t[2]), "path": t[3]}
                        for t in targets}}


def test_package_declares_a_library_its_targets_and_their_folders(ios_builds: IosBuilds) -> None:
    bundle = ios_builds.bundle("tiny-if")
    package = package_declarations(bundle)
    assert package["tools"] == "5.7" and package["platforms"] == ".iOS(.v16), .macOS(.v13)"
    assert package["products"] == [("TinyIf", "TinyIf")]
    targets = package["targets"]
    assert targets["TinyIf"]["dependencies"] == ["TinyIfCore"]
    assert targets["TinyIfTests"] == {"kind": "testTarget", "dependencies": ["TinyIf"], "path": "Tests/TinyIfTests"}
    for target in targets.values():
        assert (bundle / target["path"]).is_dir()
    core = bundle / targets["TinyIfCore"]["path"]
    assert (core / "include" / "edgepack.h").is_file() and (core / "kernels" / "registry.c").is_file()
    assert "import TinyIfCore" in (bundle / "Sources/TinyIf/CoreStep.swift").read_text()


def test_resources_are_the_manifest_partitions(ios_builds: IosBuilds) -> None:
    bundle = ios_builds.bundle("tiny-if")
    manifest = json.loads((bundle / "manifest.json").read_text())
    providers = {p["provider"] for p in manifest["partitions"]}
    assert providers == {"coreml", "neon"}, "tiny-if's If runs on the C core, the rest on CoreML"
    wrapper = (bundle / "Sources/TinyIf/TinyIf.swift").read_text()
    for part in manifest["partitions"]:
        suffix = ".mlpackage" if part["provider"] == "coreml" else ".epk"
        assert part["artifact"] == f"Sources/TinyIf/Resources/{part['id']}{suffix}"
        assert (bundle / part["artifact"]).exists()
        step = "CoreMLStep" if part["provider"] == "coreml" else "CoreStep"
        assert f'{step}(resource: "{part["id"]}"' in wrapper
    order = [m.group(1) for m in re.finditer(r'Step\(resource: "(p\d+)"', wrapper)]
    assert order == [p["id"] for p in manifest["partitions"]]


def test_a_model_wholly_on_coreml_has_no_c_target(ios_builds: IosBuilds) -> None:
    bundle = ios_builds.bundle("tiny-cnn")
    manifest = json.loads((bundle / "manifest.json").read_text())
    if any(p["provider"] != "coreml" for p in manifest["partitions"]):
        pytest.skip("tiny-cnn is not wholly on CoreML in this version")
    assert "TinyCnnCore" not in (bundle / "Package.swift").read_text()
    assert not (bundle / "Sources/TinyCnnCore").exists() and not (bundle / "Sources/TinyCnn/CoreStep.swift").exists()


def snippet(bundle: Path) -> str:
    return re.search(r"```swift\n(.*?)```", (bundle / "README.md").read_text(), re.S).group(1)


@pytest.mark.parametrize("name", ["tiny-cnn", "tiny-if"])
def test_readme_snippet_calls_the_generated_api(ios_builds: IosBuilds, name: str) -> None:
    bundle = ios_builds.bundle(name)
    model = type_name(name)
    code, wrapper = snippet(bundle), (bundle / f"Sources/{model}/{model}.swift").read_text()
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert f"import {model}\n" in code and f"try await {model}()" in code
    call = re.search(r"model\.predict\((.*)\)", code).group(1)
    labels = re.findall(r"(\w+): \w+", call)
    assert labels == [member_name(i["name"]) for i in manifest["inputs"]]
    signature = ", ".join(f"{label}: [{SWIFT_VALUES[i['dtype']]}]" for label, i in zip(labels, manifest["inputs"]))
    assert f"public func predict({signature}) async throws -> {model}Output" in wrapper
    used = re.search(r"output\.(\w+)", code).group(1)
    assert f"public let {used}: [Float]" in wrapper
    assert "public init(configuration: MLModelConfiguration = MLModelConfiguration()) async throws" in wrapper


def test_xctest_data_is_the_sample_and_the_source_output(ios_builds: IosBuilds) -> None:
    bundle = ios_builds.bundle("tiny-cnn")
    resources = bundle / "Tests/TinyCnnTests/Resources"
    feeds = ios_builds.feeds("tiny-cnn")
    stored = np.fromfile(resources / "input-image.bin", dtype=np.float32).reshape(feeds["image"].shape)
    np.testing.assert_array_equal(stored, feeds["image"])
    reference = Session(samples.path("tiny-cnn"), providers=["reference"]).run(feeds)["probs"]
    np.testing.assert_allclose(np.fromfile(resources / "expected-probs.bin", dtype=np.float32).reshape(
        reference.shape), reference, rtol=1e-6, atol=1e-7)
    test = (bundle / "Tests/TinyCnnTests/TinyCnnTests.swift").read_text()
    assert 'try stored("input-image", as: Float.self)' in test
    assert 'XCTAssertGreaterThanOrEqual(cosine(output.probsValues, try stored("expected-probs", as: Float.self))' \
        in test
    assert "let minimumCosine: Float = 0.999" in test
