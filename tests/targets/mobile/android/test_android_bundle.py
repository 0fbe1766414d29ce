"""The android bundle: the generated Java runs on the host JVM over the x86_64 library and matches `reference` on the
bundle's graph within 1e-4; the arm64 library runs under qemu-aarch64 through its JNI entry points; every library
passes Android's load checks; the module and the AAR have the layout Gradle and the Android build tools read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import edgepack
from edgepack import samples
from edgepack.targets.mobile.android import native
from tests.output_error import relative_error
from tests.small_feeds import small_feeds

from .android_builds import HERE, TOLERANCE, AndroidBuilds, bundle_at, run_driver, run_java


def assert_matches(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray], label: str) -> None:
    assert sorted(actual) == sorted(expected)
    for key, value in expected.items():
        assert actual[key].shape == value.shape, key
        error = relative_error(value, actual[key])
        print(f"{label} {key}: relative max abs diff {error:.3g}")
        assert error <= TOLERANCE, key


@pytest.mark.slow
@pytest.mark.parametrize("name", samples.names())
def test_sample_runs_in_the_host_jvm_and_matches_reference(android_builds: AndroidBuilds, name: str,
                                                            tmp_path: Path) -> None:
    bundle = android_builds.bundle(name)
    actual = run_java(bundle, small_feeds(name), tmp_path)
    assert_matches(android_builds.reference(name), actual, f"{name} jvm")


def test_direct_buffers_and_a_stream_give_the_arrays_outputs(android_builds: AndroidBuilds, tmp_path: Path) -> None:
    bundle = android_builds.bundle("tiny-transformer")
    arrays = run_java(bundle, small_feeds("tiny-transformer"), tmp_path / "arrays")
    buffers = run_java(bundle, small_feeds("tiny-transformer"), tmp_path / "buffers", load="stream", api="buffers")
    for key, value in arrays.items():
        np.testing.assert_array_equal(buffers[key], value)


def test_the_int8_bundle_keeps_the_profile_cosine_against_onnxruntime_on_the_source(android_builds: AndroidBuilds,
                                                                                   tmp_path: Path) -> None:
    feeds = small_feeds("tiny-cnn", seed=3)
    actual = run_java(android_builds.bundle("tiny-cnn"), feeds, tmp_path)
    session = ort.InferenceSession(str(samples.path("tiny-cnn")), providers=["CPUExecutionProvider"])
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    minimum = edgepack.load_profile("android").required_cosine
    for key, value in expected.items():
        a, b = value.ravel().astype(np.float64), actual[key].ravel().astype(np.float64)
        cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        assert cosine >= minimum, (key, cosine)


@pytest.mark.parametrize("name", ["tiny-cnn", "ppocr-cls"])
def test_arm64_library_runs_under_qemu_through_its_jni_entry_points(android_builds: AndroidBuilds, name: str,
                                                                     tmp_path: Path) -> None:
    bundle = android_builds.bundle(name)
    actual = run_driver(android_builds, bundle, "arm64-v8a", small_feeds(name), tmp_path)
    assert_matches(android_builds.reference(name), actual, f"{name} arm64 under qemu")


def test_a_plan_that_does_not_check_is_the_bridge_s_exception(android_builds: AndroidBuilds, tmp_path: Path) -> None:
    bundle = android_builds.bundle("tiny-cnn")
    broken = tmp_path / "broken.epk"
    data = bytearray(bundle.plan.read_bytes())
    data[40:48] = b"\xff" * 8
    broken.write_bytes(bytes(data))
    driver = android_builds.driver("x86_64")
    proc = subprocess.run([str(driver), str(bundle.library("x86_64")), bundle.jni_prefix, str(broken), str(tmp_path),
                           "--"], capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"{bundle.info['package'].replace('.', '/')}/EdgepackException: "), proc.stderr


@pytest.mark.parametrize("abi", native.ABIS, ids=lambda abi: abi.name)
def test_every_library_passes_android_s_load_checks(android_builds: AndroidBuilds, abi: native.Abi) -> None:
    library = android_builds.bundle("tiny-cnn").library(abi.name)
    assert native.check(library, abi) == []
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
    assert names and all(name.startswith("Java_") for name in names), names


def test_the_load_checks_find_what_android_refuses(tmp_path: Path) -> None:
    source = tmp_path / "uses_libc.c"
    source.write_text("#include <stdio.h>\nint visible(void) { return puts(\"hi\"); }\n")
    library = tmp_path / "libuses_libc.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-z,max-page-size=4096", "-o", str(library), str(source)],
                   check=True)
    problems = native.check(library, native.ABIS[0])
    text = "; ".join(problems)
    assert "not a shared object for EM_AARCH64" in text
    assert "needs libc.so.6" in text
    assert "undefined symbol puts" in text
    assert "exports visible" in text
    assert "aligned to 4096" in text


def test_the_bridge_s_jni_slots_are_the_jdk_s(tmp_path: Path, android_builds: AndroidBuilds) -> None:
    java_home = Path(shutil.which("javac")).resolve().parent.parent
    bridge = android_builds.bundle("tiny-cnn").folder / "native" / "bridge"
    printed = []
    for name, flags in (("jdk", [f"-I{java_home / 'include'}", f"-I{java_home / 'include' / 'linux'}"]),
                        ("ours", ["-DEP_JNI", f"-I{bridge}"])):
        binary = tmp_path / name
        subprocess.run(["cc", *flags, "-o", str(binary), str(HERE / "jni_slots.c")], check=True)
        printed.append(subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout)
    assert printed[0] == printed[1]
    assert "GetDirectBufferAddress 230" in printed[0]


def test_the_module_and_the_aar_have_the_android_layout(android_builds: AndroidBuilds, tmp_path: Path) -> None:
    bundle = android_builds.bundle("tiny-cnn")
    info, folder = bundle.info, bundle.folder
    gradle = (folder / "build.gradle.kts").read_text()
    assert 'id("com.android.library")' in gradle
    assert f'namespace = "{info["package"]}"' in gradle and "minSdk = 24" in gradle
    assert f"-keep class {info['package']}.{info['class']}" in (folder / "consumer-rules.pro").read_text()
    for abi in native.ABIS:
        assert (folder / "src/main/jniLibs" / abi.name / f"lib{info['library']}.so").is_file()
    with zipfile.ZipFile(folder / info["aar"]) as aar:
        names = set(aar.namelist())
        assert {"AndroidManifest.xml", "classes.jar", "R.txt", "proguard.txt", f"assets/{bundle.plan.name}"} <= names
        assert {f"jni/{abi.name}/lib{info['library']}.so" for abi in native.ABIS} <= names
        assert aar.read(f"assets/{bundle.plan.name}") == bundle.plan.read_bytes()
        manifest = aar.read("AndroidManifest.xml").decode()
        assert f'package="{info["package"]}"' in manifest and 'android:minSdkVersion="24"' in manifest
        (tmp_path / "classes.jar").write_bytes(aar.read("classes.jar"))
    qualified = f"{info['package']}.{info['class']}"
    javap = subprocess.run(["javap", "-v", "-cp", str(tmp_path / "classes.jar"), qualified], capture_output=True,
                           text=True, check=True).stdout
    assert "major version: 52" in javap  # Java 8 class files: every Android toolchain reads them
    assert "implements java.lang.AutoCloseable" in javap
    assert re.search(rf"public static {re.escape(qualified)} load\(java\.io\.InputStream\) throws "
                     rf"java\.io\.IOException, {re.escape(info['package'])}\.EdgepackException", javap)
    assert re.search(rf"public synchronized {re.escape(qualified)}\$Outputs run\(float\[\]\)", javap)
    assert "public synchronized java.nio.FloatBuffer inputImage()" in javap
    assert "RuntimeInvisibleParameterAnnotations" in javap and "androidx/annotation/NonNull" in javap
    with zipfile.ZipFile(tmp_path / "classes.jar") as jar:
        assert not any(name.startswith("androidx/") for name in jar.namelist())


def test_two_builds_of_one_model_are_byte_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second build compiles its libraries afresh (an empty object cache), as on another machine."""
    source = samples.path("tiny-cnn")
    folders = [edgepack.build(source, profile="android", output_dir=tmp_path / "0", verify=False).bundle_dir]
    monkeypatch.setenv("EDGEPACK_CACHE", str(tmp_path / "empty-cache"))
    folders.append(edgepack.build(source, profile="android", output_dir=tmp_path / "1", verify=False).bundle_dir)
    assert len(list((tmp_path / "empty-cache" / "native" / "android").glob("*.o"))) > len(native.ABIS)
    files = [{p.relative_to(f): p.read_bytes() for p in sorted(f.rglob("*")) if p.is_file() and p.name !=
              "manifest.json"} for f in folders]
    assert files[0].keys() == files[1].keys()
    assert [k for k in files[0] if files[0][k] != files[1][k]] == []


def _odd_names_model(path: Path) -> Path:
    names = ['in"put*/\\u000a', "class", "ünïcode", "out\nput", "out_put"]
    x = helper.make_tensor_value_info(names[0], TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info(names[1], TensorProto.INT64, [1, 4])
    z = helper.make_tensor_value_info(names[2], TensorProto.FLOAT, [1, 4])
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in names[3:]]
    graph = helper.make_graph(
        [helper.make_node("Cast", [names[1]], ["y_float"], to=TensorProto.FLOAT),
         helper.make_node("Add", [names[0], "y_float"], [names[3]]),
         helper.make_node("Mul", [names[0], names[2]], [names[4]])],
        "odd", [x, y, z], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)
    return path


def test_odd_tensor_and_model_names_give_java_that_compiles_and_runs(android_builds: AndroidBuilds,
                                                                     tmp_path: Path) -> None:
    source = _odd_names_model(tmp_path / "class.onnx")
    result = edgepack.build(source, profile="android", output_dir=tmp_path / "dist", verify=False)
    bundle = bundle_at(result.bundle_dir)
    assert bundle.info["class"] == "Class" and bundle.info["package"] == "ai.edgepack.class_model"
    rng = np.random.default_rng(0)
    feeds = {'in"put*/\\u000a': rng.standard_normal((1, 4)).astype(np.float32),
             "class": rng.integers(-5, 5, (1, 4)).astype(np.int64),
             "ünïcode": rng.standard_normal((1, 4)).astype(np.float32)}
    actual = run_java(bundle, feeds, tmp_path / "run")
    expected = ort.InferenceSession(str(source), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(actual["out\nput"], expected[0], rtol=0, atol=1e-6)
    np.testing.assert_allclose(actual["out_put"], expected[1], rtol=0, atol=1e-6)


def test_the_manifest_names_the_module_s_parts(android_builds: AndroidBuilds) -> None:
    bundle = android_builds.bundle("tiny-cnn")
    manifest = json.loads((bundle.folder / "manifest.json").read_text())
    partition = manifest["partitions"][0]
    assert partition["provider"] == "neon" and partition["artifact"] == "src/main/assets/tiny_cnn.epk"
    assert set(partition["android"]["libraries"]) == {abi.name for abi in native.ABIS}



def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _c_divmod(x: int, y: int) -> tuple[int, int]:
    """C's division: the quotient rounded toward zero, the remainder with the dividend's sign."""
    quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
    return quotient, x - quotient * y


def _to_float32(n: int) -> float:
    """`n` rounded once to the nearest float32 (ties to even), exactly."""
    magnitude, shift = abs(n), max(abs(n).bit_length() - 24, 0)
    quotient, rest = divmod(magnitude, 1 << shift)
    half = (1 << shift) >> 1
    if shift and (rest > half or (rest == half and quotient & 1)):
        quotient += 1
    return float(np.float32(quotient * (1 << shift) * (1 if n >= 0 else -1)))


def _eabi_operands(count: int) -> tuple[list[int], list[int], list[float]]:
    rng = np.random.default_rng(7)
    edges = [(2**64 - 1, 3), (2**63, 2**63 - 1), (5, 2**64 - 1), (2**53 + 1, 7), (2**63 + 2**40 + 1, 2**32 + 1),
             (2**40 + 2**16 + 1, 3), (2**64 - 2**40 - 2**16 - 1, 5)]  # a float32 tie broken only by bit 0
    a, b = [x for x, _ in edges], [y for _, y in edges]
    while len(a) < count:
        bits = int(rng.integers(1, 65))
        x, y = int(rng.integers(0, 2**63)) >> (64 - bits) << 1 | int(rng.integers(0, 2)), int(rng.integers(1, 2**63))
        y >>= int(rng.integers(0, 62))
        if y & 0xFFFFFFFF == 0 or (_signed(x, 64) == -2**63 and _signed(y, 64) == -1) or \
                (_signed(x, 32) == -2**31 and _signed(y, 32) == -1):
            continue
        a.append(x)
        b.append(y if rng.random() < 0.5 else (2**64 - y))
    reals = [float(v) for v in rng.uniform(-1, 1, count) * np.exp2(rng.integers(0, 62, count))]
    return a, b, reals


def _eabi_expected(a: list[int], b: list[int], reals: list[float]) -> bytes:
    """What eabi_check.c must write, computed with Python integers."""
    out = bytearray()
    for x, y, real in zip(a, b, reals):
        sx, sy = _signed(x, 64), _signed(y, 64)
        wx, wy, ix, iy = x & 0xFFFFFFFF, y & 0xFFFFFFFF, _signed(x, 32), _signed(y, 32)
        out += np.array([v & (2**64 - 1) for v in (x // y, x % y, *_c_divmod(sx, sy))], dtype=np.uint64).tobytes()
        out += np.array([v & 0xFFFFFFFF for v in (wx // wy, wx % wy, *_c_divmod(ix, iy))], dtype=np.uint32).tobytes()
        out += np.array([_to_float32(sx), _to_float32(x)], dtype=np.float32).tobytes()
        out += np.array([float(sx), float(x)], dtype=np.float64).tobytes()
        single = float(np.float32(real))
        out += np.array([int(real), int(single), int(abs(real))], dtype=np.int64).tobytes()
    return bytes(out)


@pytest.mark.skipif(shutil.which("qemu-arm") is None, reason="qemu-arm is not installed")
def test_the_32_bit_arm_eabi_helpers_compute_what_c_asks(android_builds: AndroidBuilds, tmp_path: Path) -> None:
    a, b, reals = _eabi_operands(400)
    (tmp_path / "operands.h").write_text(
        f"#define COUNT {len(a)}\n"
        f"static const uint64_t U64_A[] = {{{', '.join(f'{x}ull' for x in a)}}};\n"
        f"static const uint64_t U64_B[] = {{{', '.join(f'{y}ull' for y in b)}}};\n"
        f"static const double REALS[] = {{{', '.join(repr(r) for r in reals)}}};\n")
    bridge = android_builds.bundle("tiny-cnn").folder / "native" / "bridge"
    abi = next(abi for abi in native.ABIS if abi.name == "armeabi-v7a")
    binary = tmp_path / "eabi_check"
    subprocess.run([native.CLANG, f"--target={abi.triple}", *abi.flags, "-O2", "-ffreestanding", "-nostdlib",
                    "-nostdlibinc", "-static", "-fomit-frame-pointer", "-fuse-ld=lld", f"-I{tmp_path}",
                    "-o", str(binary), str(HERE / "eabi_check.c"), str(bridge / "freestanding.c")], check=True)
    actual = subprocess.run(["qemu-arm", str(binary)], capture_output=True, timeout=60, check=True).stdout
    expected = _eabi_expected(a, b, reals)
    record = len(expected) // len(a)
    wrong = [i for i in range(len(a)) if actual[i * record:(i + 1) * record] != expected[i * record:(i + 1) * record]]
    assert len(actual) == len(expected) and wrong == [], [(a[i], b[i], reals[i]) for i in wrong[:5]]
