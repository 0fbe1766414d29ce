"""`edgepack bench BUNDLE --device ssh://...`: a real OpenSSH server on 127.0.0.1 (a host key and a client key made
for the test, a port of its own); the C library bundle's example is built for the server's architecture, pushed, run
and pulled back; the result validates against docs/bench.schema.json and its outputs match `reference`."""

from __future__ import annotations

import base64
import getpass
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import edgepack
from edgepack import samples
from edgepack.bench_device import bench_library
from edgepack.bench_result import LatencyFigures
from edgepack.devices import open_device
from edgepack.devices.ssh import SshDevice
from edgepack.portability_html import EMULATED_COLOUR, LATENCY_COLOUR
from edgepack.runtime import Session
from edgepack.runtime.errors import EdgepackError
from edgepack.targets.web.chromium import Chromium
from edgepack.targets.web.chromium import missing as chromium_missing
from tests.screenshot_colours import COUNT_COLOURS

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "bench.schema.json").read_text())
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SFTP_SERVER = "/usr/lib/openssh/sftp-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def ssh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshDevice]:
    if not (Path(SSHD).exists() and shutil.which("ssh") and shutil.which("ssh-keygen")):
        pytest.skip("openssh-server and openssh-client are not installed")
    folder = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    port = free_port()
    config = folder / "sshd_config"
    config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
                      f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPasswordAuthentication no\n"
                      "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
                      f"PidFile {folder / 'sshd.pid'}\nSubsystem sftp {SFTP_SERVER}\n")
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    else:
        server.kill()
        pytest.fail(f"sshd did not start: {server.stderr.read()}")
    yield SshDevice("127.0.0.1", getpass.getuser(), port, folder / "client_key", folder / "known_hosts")
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="module")
def library_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return edgepack.build(samples.path("tiny-cnn"), profile="raspberry-pi",
                          output_dir=tmp_path_factory.mktemp("bench-device"), verify=False).bundle_dir


def test_a_c_library_bundle_is_benchmarked_over_ssh(ssh_server: SshDevice, library_bundle: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgepack.bench_device.open_device", lambda spec, identity: ssh_server)
    feeds = samples.feeds("tiny-cnn")
    result = bench_library(library_bundle, ssh_server.spec, runs=12, warmup=2, feeds=feeds)
    jsonschema.validate(result, SCHEMA)
    assert result["device"]["spec"] == ssh_server.spec and result["emulated"] is False
    assert result["device"]["arch"] == os.uname().machine and result["runs"] == 12
    assert result["fidelity"]["passed"]
    reference = Session(library_bundle, providers=["reference"]).run(feeds)
    assert [o["name"] for o in result["fidelity"]["outputs"]] == list(reference)
    for check in result["fidelity"]["outputs"]:
        assert check["max_abs_diff"] <= 1e-4 * check["scale"]
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"]
    assert result["memory"]["peak_rss_mb"] > 0
    ops = result["ops"]  # the profiling build, run over ssh on the same plan and inputs
    assert ops["device"] == ssh_server.spec and ops["runs"] == 10 and not ops["emulated"]
    assert abs(ops["ops_ms"] - ops["run_ms"]) <= 0.1 * ops["run_ms"]
    assert "Conv" in ops["by_kind"] and sum(ops["by_kind"].values()) == pytest.approx(ops["ops_ms"])
    assert all(op["calls"] == ops["runs"] for op in ops["ops"])  # no branch: every op runs every run


def test_the_workspace_is_removed_after_the_run(ssh_server: SshDevice) -> None:
    with ssh_server.workspace() as folder:
        assert ssh_server.run(["test", "-d", folder]).returncode == 0
    assert ssh_server.run(["test", "-e", folder]).returncode != 0


def test_the_device_facts_come_from_the_device(ssh_server: SshDevice) -> None:
    facts = ssh_server.facts()
    assert facts.arch == os.uname().machine and facts.cores >= 1 and facts.os.startswith("Linux")


def test_the_cli_prints_json_that_validates(ssh_server: SshDevice, library_bundle: Path, cli,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("edgepack.bench_device.open_device", lambda spec, identity: ssh_server)
    result = cli("bench", library_bundle, "--device", ssh_server.spec, "--runs", "5", "--warmup", "1", "--json",
                 "--no-ops")
    assert result.code == 0, result.err
    printed = json.loads(result.out)
    jsonschema.validate(printed, SCHEMA)
    assert printed["ops"] is None


@pytest.mark.parametrize("peer", ["onnxruntime", "openvino"])
def test_a_peer_runs_the_source_model_beside_the_bundle_on_the_host(library_bundle: Path, peer: str) -> None:
    pytest.importorskip(peer)
    feeds = samples.feeds("tiny-cnn")
    result = bench_library(library_bundle, "host", runs=6, warmup=1, feeds=feeds, compare=[peer],
                           source=samples.path("tiny-cnn"))
    jsonschema.validate(result, SCHEMA)
    [beside] = result["peers"]
    assert beside["engine"].lower().startswith(peer) and "tiny-cnn.onnx" in beside["engine"]
    assert beside["runs"] == result["runs"] == 6 and beside["warmup"] == 1 and beside["inputs"] == result["inputs"]
    assert beside["fidelity"]["against"] == "reference on the source model" and beside["fidelity"]["passed"]
    assert beside["device"] == result["device"] and not beside["emulated"]


def test_threads_build_the_library_with_its_pool_and_run_the_peer_on_as_many(library_bundle: Path) -> None:
    """--threads 2 on a device: the example (built with THREADS=1) and the profiling ep_run run on 2 threads, the
    outputs still pass against reference, and the peer on this host runs on 2 threads too."""
    pytest.importorskip("onnxruntime")
    result = bench_library(library_bundle, "host", runs=4, warmup=1, feeds=samples.feeds("tiny-cnn"),
                           compare=["onnxruntime"], source=samples.path("tiny-cnn"), threads=2)
    jsonschema.validate(result, SCHEMA)
    [beside] = result["peers"]
    assert result["engine"].endswith(", 2 threads") and beside["engine"].endswith(", 2 threads")
    assert result["fidelity"]["passed"] and beside["fidelity"]["passed"] and result["ops"]


def test_the_cli_prints_the_ratios_to_the_peer_and_compare_reads_its_file(library_bundle: Path, cli,
                                                                          tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    result = cli("bench", library_bundle, "--device", "host", "--runs", "4", "--compare", "onnxruntime",
                 "--source", samples.path("tiny-cnn"), "--no-ops")
    assert result.code == 0, result.err
    ours = next(line for line in result.out.splitlines() if line.startswith("raspberry-pi on host: p50"))
    peer = next(line for line in result.out.splitlines() if line.startswith("onnxruntime "))
    assert "(1.00x)" in ours and "fidelity PASS" in peer
    printed = cli("bench", library_bundle, "--device", "host", "--runs", "4", "--compare", "onnxruntime",
                  "--source", samples.path("tiny-cnn"), "--no-ops", "--json").out
    (tmp_path / "both.json").write_text(printed)
    compared = cli("bench", "compare", tmp_path / "both.json")
    assert compared.code == 0 and sum(" on host: p50 " in line for line in compared.out.splitlines()) == 2


def test_a_peer_runs_only_on_this_host(library_bundle: Path, cli) -> None:
    result = cli("bench", library_bundle, "--device", "qemu-arm64", "--compare", "onnxruntime")
    assert result.code == 2 and "not on qemu-arm64" in result.err and "--device host" in result.err


def test_the_summary_names_the_slowest_op_kinds(library_bundle: Path, cli) -> None:
    result = cli("bench", library_bundle, "--device", "host", "--runs", "3", "--warmup", "0")
    assert result.code == 0, result.err
    line = next(line for line in result.out.splitlines() if line.startswith("per op"))
    assert "3 profiled runs" in line and "Conv" in line


def test_an_unreachable_host_is_one_paragraph_and_json_says_so(library_bundle: Path, cli) -> None:
    result = cli("bench", library_bundle, "--device", f"ssh://nobody@127.0.0.1:{free_port()}", "--json")
    assert result.code == 2
    printed = json.loads(result.out)
    assert "ssh to ssh://nobody@127.0.0.1" in printed["error"] and "--identity" in printed["fix"]


@pytest.mark.parametrize("spec", ["ssh://", "ssh://host:notaport", "ssh://host/path", "telnet://host"])
def test_bad_device_specs_are_refused(spec: str) -> None:
    with pytest.raises(EdgepackError, match="ssh device|unknown device"):
        open_device(spec)


def test_the_latency_figures_trim_and_rank() -> None:
    figures = LatencyFigures.of([float(v) for v in range(1, 11)] + [100.0])
    assert figures.p50 == 6.0 and figures.p99 > figures.p90 >= figures.p50
    assert figures.trimmed_mean == pytest.approx(np.mean(range(2, 11)))
    assert figures.mean == pytest.approx((55 + 100) / 11)


@pytest.fixture(scope="module")
def two_results(library_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A host result and an emulated one (the same bundle under qemu-aarch64), as files."""
    folder = tmp_path_factory.mktemp("results")
    paths = []
    for spec in ("host", "qemu-arm64"):
        result = bench_library(library_bundle, spec, runs=8, warmup=1, feeds=samples.feeds("tiny-cnn"))
        jsonschema.validate(result, SCHEMA)
        assert result["emulated"] is (spec == "qemu-arm64")
        paths.append(folder / f"{spec}.json")
        paths[-1].write_text(json.dumps(result))
    return paths


def test_compare_prints_the_ratios_to_the_first_result(two_results: list[Path], cli) -> None:
    result = cli("bench", "compare", *two_results)
    assert result.code == 0, result.err
    host, emulated = [json.loads(p.read_text()) for p in two_results]
    lines = [line for line in result.out.splitlines() if " on " in line]
    assert lines[0].startswith("raspberry-pi on host: p50") and "(1.00x)" in lines[0]
    ratio = emulated["latency_ms"]["p50"] / host["latency_ms"]["p50"]
    assert "raspberry-pi on qemu-arm64 (emulated)" in lines[1] and f"({ratio:.2f}x)" in lines[1]


def test_compare_refuses_what_is_not_a_bench_result(tmp_path: Path, cli) -> None:
    (tmp_path / "other.json").write_text('{"model": "x"}')
    result = cli("bench", "compare", tmp_path / "other.json")
    assert result.code == 2 and "is not a bench result of schema edgepack-bench/1" in result.err


@pytest.mark.skipif(chromium_missing() is not None, reason=f"no headless Chromium: {chromium_missing()}")
def test_the_html_report_draws_its_plots_in_chromium(two_results: list[Path], tmp_path: Path, cli) -> None:
    assert cli("bench", "compare", *two_results, "--html", tmp_path / "report.html").code == 0
    with Chromium(tmp_path) as browser:
        page = browser.page("report.html")
        page.set_viewport_size({"width": 1400, "height": 900})
        rows = page.locator("#results tbody tr")
        assert rows.count() == 2
        assert "emulated" in rows.nth(1).inner_text() and "emulated" not in rows.nth(0).inner_text()
        runs = sum(len(json.loads(p.read_text())["times_ms"]) for p in two_results)
        assert page.locator("#latency-distribution rect").count() >= runs + 2
        for plot in ("latency-distribution", "p50-plot", "ops-plot-0", "ops-plot-1", "timeline-plot"):
            box = page.locator(f"#{plot}").bounding_box()
            assert box and box["width"] > 300 and box["height"] > 60
        ops = sum(len(json.loads(p.read_text())["ops"]["ops"]) for p in two_results)
        assert page.locator("#timeline-plot rect").count() >= ops
        shot = page.screenshot(full_page=True)
        counts = page.evaluate(COUNT_COLOURS, [base64.b64encode(shot).decode(), [LATENCY_COLOUR, EMULATED_COLOUR]])
    assert counts[0] > 300 and counts[1] > 300, counts
