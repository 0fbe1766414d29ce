"""Sample models built with `--profile android`, and their libraries run three ways: the generated Java class on the
host JVM over the x86_64 library, and the JNI entry points driven by a C program (jni_driver.c) natively over the
x86_64 library and under qemu-aarch64 over the arm64 one. Built once per test run and shared."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import edgepack
from edgepack import samples
from edgepack.runtime import Session
from edgepack.runtime.native import epk
from edgepack.targets.mobile.android import java_api
from tests.small_feeds import small_feeds

HERE = Path(__file__).parent
AARCH64_CC = "aarch64-linux-gnu-gcc"
AARCH64_SYSROOT = "/usr/aarch64-linux-gnu"
TOLERANCE = 1e-4
"""Max abs diff allowed against `reference` on the bundle's graph, relative to max(1, max |reference output|)."""


@dataclass(frozen=True)
class AndroidBundle:
    folder: Path
    info: dict
    """The manifest's `android` entry."""

    @property
    def plan(self) -> Path:
        return self.folder / "src" / "main" / "assets" / f"{self.info['module']}.epk"

    def library(self, abi: str) -> Path:
        return self.folder / self.info["libraries"][abi]

    @property
    def jni_prefix(self) -> str:
        return java_api.jni_prefix(self.info["package"], self.info["class"])


@dataclass
class AndroidBuilds:
    root: Path
    bundles: dict[str, AndroidBundle] = field(default_factory=dict)
    drivers: dict[str, Path] = field(default_factory=dict)

    def bundle(self, name: str) -> AndroidBundle:
        """The android bundle of sample `name` at its small feeds' shapes (verify left out: the tests here check the
        libraries themselves against `reference`)."""
        if name not in self.bundles:
            feeds = small_feeds(name)
            result = edgepack.build(samples.path(name), profile="android", output_dir=self.root / "dist",
                                    input_shapes={k: v.shape for k, v in feeds.items()}, sample_inputs=[feeds],
                                    verify=False)
            self.bundles[name] = bundle_at(result.bundle_dir)
        return self.bundles[name]

    def reference(self, name: str) -> dict[str, np.ndarray]:
        """`reference` on the bundle's own graph (the same int8 weights) on the small feeds."""
        return Session(self.bundle(name).folder, providers=["reference"]).run(small_feeds(name))

    def driver(self, abi: str) -> Path:
        """jni_driver.c built for the host (x86_64) or for aarch64."""
        if abi not in self.drivers:
            output = self.root / f"jni_driver-{abi}"
            compiler = AARCH64_CC if abi == "arm64-v8a" else "cc"
            bridge = next(iter(self.bundles.values())).folder / "native" / "bridge"
            subprocess.run([compiler, "-O1", "-std=c11", "-D_GNU_SOURCE", f"-I{bridge}", "-o", str(output),
                            str(HERE / "jni_driver.c"), "-ldl"], check=True, capture_output=True)
            self.drivers[abi] = output
        return self.drivers[abi]


def bundle_at(folder: Path) -> AndroidBundle:
    manifest = json.loads((folder / "manifest.json").read_text())
    return AndroidBundle(folder, manifest["partitions"][0]["android"])


def plan_ports(bundle: AndroidBundle) -> tuple[list[java_api.JavaPort], list[java_api.JavaPort]]:
    """The bundle's inputs and outputs as the generated class names them."""
    described = [[(p.name, p.dtype, p.shape) for p in group] for group in epk.ports(bundle.plan.read_bytes())]
    return java_api.java_ports(*described)


def run_driver(builds: AndroidBuilds, bundle: AndroidBundle, abi: str, feeds: dict[str, np.ndarray], work: Path
               ) -> dict[str, np.ndarray]:
    """The bundle's `abi` library run once by jni_driver (aarch64 under qemu-aarch64)."""
    inputs, outputs = plan_ports(bundle)
    work.mkdir(parents=True, exist_ok=True)
    files = []
    for port in inputs:
        path = work / f"{port.ident}.bin"
        np.ascontiguousarray(feeds[port.name], dtype=port.dtype).tofile(path)
        files.append(str(path))
    command = [str(builds.driver(abi)), str(bundle.library(abi)), bundle.jni_prefix, str(bundle.plan), str(work),
               *files, "--", *(str(p.bytes) for p in outputs)]
    if abi == "arm64-v8a":
        command = ["qemu-aarch64", "-L", AARCH64_SYSROOT, *command]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {p.name: np.fromfile(work / f"{i}.bin", dtype=p.dtype).reshape(p.shape) for i, p in enumerate(outputs)}


def java_driver(bundle: AndroidBundle, inputs: list[java_api.JavaPort], outputs: list[java_api.JavaPort]) -> str:
    """A Java program that loads the plan (from a file, mapped, or from a stream), runs the model with the arrays API
    (`arrays`) or through the direct buffers (`buffers`), and writes each output as raw little-endian bytes."""
    cls = bundle.info["class"]
    reads = [f"        {p.element}[] {p.ident} = new {p.element}[{cls}.INPUT_{p.constant}_SIZE];\n"
             f"        read(args[{3 + i}]){'' if p.element == 'byte' else '.as' + p.buffer + '()'}.get({p.ident});"
             for i, p in enumerate(inputs)]
    puts = [f"                model.input{p.upper}().put({p.ident});" for p in inputs]
    array_writes = [f"                write(args[2] + \"/{i}.bin\", {p.ident}Bytes(outputs.{p.ident}));"
                    for i, p in enumerate(outputs)]
    buffer_writes = [f"                write(args[2] + \"/{i}.bin\", copy(model.output{p.upper}(), "
                     f"{p.bytes}));" for i, p in enumerate(outputs)]
    conversions = "\n".join(
        f"    static ByteBuffer {p.ident}Bytes({p.element}[] values) {{\n"
        f"        ByteBuffer out = ByteBuffer.allocate({p.bytes}).order(ByteOrder.LITTLE_ENDIAN);\n"
        f"        out{'' if p.element == 'byte' else '.as' + p.buffer + '()'}.put(values);\n"
        f"        return out;\n    }}" for p in outputs)
    return f"""import {bundle.info['package']}.{cls};
import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;

public class RunBundle {{
    static ByteBuffer read(String path) throws Exception {{
        return ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
    }}

    static void write(String path, ByteBuffer bytes) throws Exception {{
        Files.write(Paths.get(path), bytes.array());
    }}

    static ByteBuffer copy(Buffer view, int bytes) {{
        ByteBuffer out = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (view instanceof java.nio.FloatBuffer) out.asFloatBuffer().put((java.nio.FloatBuffer) view);
        else if (view instanceof java.nio.IntBuffer) out.asIntBuffer().put((java.nio.IntBuffer) view);
        else if (view instanceof java.nio.LongBuffer) out.asLongBuffer().put((java.nio.LongBuffer) view);
        else out.put((ByteBuffer) view);
        return out;
    }}

{conversions}

    public static void main(String[] args) throws Exception {{
{chr(10).join(reads)}
        {cls} model;
        if (args[1].equals("stream")) {{
            try (InputStream stream = new FileInputStream(args[0])) {{
                model = {cls}.load(stream);
            }}
        }} else {{
            model = {cls}.load(new File(args[0]));
        }}
        try ({cls} opened = model) {{
            if (args[3 + {len(inputs)}].equals("buffers")) {{
{chr(10).join(puts)}
                model.run();
{chr(10).join(buffer_writes)}
            }} else {{
                {cls}.Outputs outputs = model.run({", ".join(p.ident for p in inputs)});
{chr(10).join(array_writes)}
            }}
        }}
    }}
}}
"""


def run_java(bundle: AndroidBundle, feeds: dict[str, np.ndarray], work: Path, load: str = "file",
             api: str = "arrays") -> dict[str, np.ndarray]:
    """The generated class on the host JVM (AAR's classes.jar, the x86_64 library), run once."""
    inputs, outputs = plan_ports(bundle)
    work.mkdir(parents=True, exist_ok=True)
    jar = work / "classes.jar"
    subprocess.run(["unzip", "-o", "-q", str(bundle.folder / bundle.info["aar"]), "classes.jar", "-d", str(work)],
                   check=True)
    (work / "RunBundle.java").write_text(java_driver(bundle, inputs, outputs))
    subprocess.run(["javac", "-cp", str(jar), "-d", str(work), str(work / "RunBundle.java")], check=True,
                   capture_output=True)
    files = []
    for port in inputs:
        path = work / f"{port.ident}.bin"
        np.ascontiguousarray(feeds[port.name], dtype=port.dtype).astype(np.dtype(port.dtype).newbyteorder("<")) \
            .tofile(path)
        files.append(str(path))
    library_path = bundle.library("x86_64").parent
    proc = subprocess.run(["java", f"-Djava.library.path={library_path}", "-cp", f"{jar}:{work}", "RunBundle",
                           str(bundle.plan), load, str(work), *files, api], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {p.name: np.fromfile(work / f"{i}.bin", dtype=np.dtype(p.dtype).newbyteorder("<")).reshape(p.shape)
            for i, p in enumerate(outputs)}


def tools_missing() -> list[str]:
    return [tool for tool in ("javac", "java", "unzip", "cc", AARCH64_CC, "qemu-aarch64") if not shutil.which(tool)]
