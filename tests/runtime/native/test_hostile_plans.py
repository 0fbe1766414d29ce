"""The loader refuses truncated, corrupted and hostile plans with an error code and a message, never a crash:
checked through ctypes and through the AddressSanitizer + UBSan runner; plus a short seeded fuzz run."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from edgepack.runtime.native.binding import NativeError, NativeSession
from edgepack.runtime.native.build import runner
from edgepack.runtime.native.epk import HEADER_BYTES, OP_RECORD_BYTES, OPS, TENSOR_RECORD_BYTES

from .sample_plans import feeds, plan

FORMAT, BOUNDS, TENSOR, OP, RUNTIME = 2, 3, 4, 5, 7
FIELDS = ["magic", "version", "header_bytes", "flags", "n_tensors", "tensors", "n_ops", "ops", "n_io", "io",
          "n_inputs", "n_outputs", "ports", "params", "params_bytes", "names", "names_bytes", "weights",
          "weights_bytes", "arena_bytes", "scratch_bytes"]
ROOT = Path(__file__).parents[3]


def header(data: bytes) -> dict[str, int]:
    return dict(zip(FIELDS[1:], struct.unpack_from("<20I", data, 4)))


def put(data: bytes, offset: int, fmt: str, *values: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def set_field(name: str, value: int) -> Callable[[bytes], bytes]:
    return lambda data: put(data, 4 * FIELDS.index(name), "<I", value)


def tensor_field(index: int, offset: int, fmt: str, value: int) -> Callable[[bytes], bytes]:
    return lambda data: put(data, header(data)["tensors"] + index * TENSOR_RECORD_BYTES + offset, fmt, value)


def first_op(kind: str, data: bytes) -> int:
    h = header(data)
    for i in range(h["n_ops"]):
        if struct.unpack_from("<H", data, h["ops"] + i * OP_RECORD_BYTES)[0] == OPS[kind]:
            return i
    raise AssertionError(kind)


def op_field(kind: str, offset: int, fmt: str, value: int) -> Callable[[bytes], bytes]:
    return lambda data: put(data, header(data)["ops"] + first_op(kind, data) * OP_RECORD_BYTES + offset, fmt, value)


def conv_param(index: int, value: int) -> Callable[[bytes], bytes]:
    def mutate(data: bytes) -> bytes:
        h = header(data)
        record = h["ops"] + first_op("Conv", data) * OP_RECORD_BYTES
        first_word = struct.unpack_from("<I", data, record + 8)[0]
        return put(data, h["params"] + 4 * (first_word + index), "<i", value)

    return mutate


def overlap_first_conv_output_with_its_input(data: bytes) -> bytes:
    h = header(data)
    record = h["ops"] + first_op("Conv", data) * OP_RECORD_BYTES
    first_io = struct.unpack_from("<I", data, record + 4)[0]
    x, _, _, y = struct.unpack_from("<4I", data, h["io"] + 4 * first_io)
    x_offset = struct.unpack_from("<I", data, h["tensors"] + x * TENSOR_RECORD_BYTES + 12)[0]
    return put(data, h["tensors"] + y * TENSOR_RECORD_BYTES + 12, "<I", x_offset + 64)


HOSTILE: dict[str, tuple[Callable[[bytes], bytes], int]] = {
    "wrong magic": (lambda d: b"EPK0" + d[4:], FORMAT),
    "future version": (set_field("version", 99), FORMAT),
    "wrong header size": (set_field("header_bytes", 64), FORMAT),
    "truncated header": (lambda d: d[:50], FORMAT),
    "truncated weights": (lambda d: d[:len(d) - 100], BOUNDS),
    "tensor table past the end": (set_field("tensors", 0xFFFFFF00), BOUNDS),
    "too many tensors": (set_field("n_tensors", 0x7FFFFFFF), FORMAT),
    "weights past the end": (set_field("weights_bytes", 0x7FFFFFFF), BOUNDS),
    "arena too small": (set_field("arena_bytes", 64), BOUNDS),
    "tensor outside the arena": (tensor_field(0, 12, "<I", 0x7FFFFFC0), BOUNDS),
    "huge dims": (tensor_field(0, 16, "<I", 0xFFFFFFFF), TENSOR),
    "rank above 8": (tensor_field(0, 1, "<B", 9), TENSOR),
    "unknown dtype": (tensor_field(0, 0, "<B", 16), TENSOR),
    "name past the names": (tensor_field(0, 4, "<I", 0x7FFFFFFF), BOUNDS),
    "unknown op id": (op_field("Conv", 0, "<H", 999), OP),
    "op tensor list past the end": (op_field("Conv", 4, "<I", 0x7FFFFFFF), BOUNDS),
    "op parameters past the end": (op_field("Conv", 12, "<I", 0x7FFFFFFF), BOUNDS),
    "bad tensor index": (lambda d: put(d, header(d)["io"], "<I", 0x00FFFFFF), TENSOR),
    "conv stride 0": (conv_param(4, 0), OP),
    "conv kernel past the weights": (conv_param(2, 1000), OP),
    "output overlapping a live tensor": (overlap_first_conv_output_with_its_input, BOUNDS),
    "scratch too small": (set_field("scratch_bytes", 0), BOUNDS),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_plan_is_refused_with_a_code_and_message(case: str) -> None:
    mutate, status = HOSTILE[case]
    with pytest.raises(NativeError) as caught:
        NativeSession(mutate(plan("tiny-cnn")))
    assert caught.value.status == status
    assert "no message" not in str(caught.value) or status == FORMAT


def test_every_truncation_of_a_plan_is_refused() -> None:
    data = plan("tiny-if")
    for length in range(0, len(data), 7):
        with pytest.raises(NativeError):
            NativeSession(data[:length])


def test_valid_plan_opens_and_a_gather_index_out_of_range_fails_at_run_time() -> None:
    import onnx
    from onnx import TensorProto, helper

    from edgepack.compiler.lower import lower

    graph = helper.make_graph([helper.make_node("Gather", ["data", "index"], ["y"])], "g",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 2]),
                               helper.make_tensor_value_info("index", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    session = NativeSession(lower(model))
    data = np.arange(8, dtype=np.float32).reshape(4, 2)
    assert np.array_equal(session.run({"data": data, "index": np.array([3, -4, 1])})["y"], data[[3, 0, 1]])
    with pytest.raises(NativeError) as caught:
        session.run({"data": data, "index": np.array([0, 4, 1])})
    assert caught.value.status == RUNTIME and "Gather" in str(caught.value)


def test_hostile_plans_under_the_sanitized_runner(tmp_path: Path) -> None:
    binary = runner(sanitized=True)
    inputs = []
    for index, value in enumerate(feeds("tiny-cnn").values()):
        inputs.append(str(tmp_path / f"in{index}.npy"))
        np.save(inputs[-1], value)
    for case, (mutate, _) in HOSTILE.items():
        path = tmp_path / "plan.epk"
        path.write_bytes(mutate(plan("tiny-cnn")))
        proc = subprocess.run([str(binary), str(path), str(tmp_path), *inputs], capture_output=True, text=True)
        assert proc.returncode == 3, (case, proc.stderr)
        assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, case


def test_short_fuzz_run_is_clean() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "epk_fuzz.py"), "--seconds", "5", "--seed", "7"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rounds, accepted = (int(v) for v in proc.stdout.split()[1:4:2])
    assert rounds > 1000 and accepted > 0


def test_the_header_is_what_the_format_says() -> None:
    data = plan("tiny-cnn")
    h = header(data)
    assert data[:4] == b"EPK1" and h["version"] == 1 and h["header_bytes"] == HEADER_BYTES
    assert h["weights"] % 64 == 0 and h["weights"] + h["weights_bytes"] == len(data)
