"""Coverage-guided fuzzing (atheris, libFuzzer's engine for Python) of the bundle loaders: `read_manifest` and
`Session(bundle)` on a real bundle whose `manifest.json` is the fuzzed input.

    python fuzz/bundle_fuzz.py -runs=100000            # libFuzzer's flags; seeds from fuzz/corpus/manifest

Every refusal must be an EdgepackError (a one-paragraph user error); any other exception is a crash, and atheris
writes the input that caused it. The mutator edits the manifest's JSON structure (a value swapped for one of
another type, a boundary number, a path that leaves the folder; a key deleted) as often as libFuzzer's byte
mutations, so that most inputs reach the partition and tensor checks behind the JSON parser. The bundles are the
tiny-cnn sample built for `generic` (an ONNX partition) and for `raspberry-pi` (a plan partition)."""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import atheris

with atheris.instrument_imports():
    from edgepack.runtime import Session
    from edgepack.runtime.bundle_format import read_manifest
    from edgepack.runtime.errors import EdgepackError

import edgepack
from edgepack import samples

SURPRISES: list[Any] = [None, 0, -1, 1, 2**31, 2**63, -(2**63), 1e308, float("nan"), "", "../../etc/passwd",
                        "/etc/passwd", "\u0000", "x" * 300, [], {}, [1, 2], {"a": 1}, True, False]


def bundles(folder: Path) -> list[Path]:
    feeds = samples.feeds("tiny-cnn")
    shapes = {key: value.shape for key, value in feeds.items()}
    return [edgepack.build(samples.path("tiny-cnn"), profile, folder, input_shapes=shapes, sample_inputs=[feeds])
            .bundle_dir for profile in ("generic", "raspberry-pi")]


def mutate_structure(value: Any, rng: random.Random) -> Any:
    """`value` with one node of its JSON tree replaced, or one key deleted."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        if rng.random() < 0.15:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: mutate_structure(value[key], rng)}
    if isinstance(value, list) and value and rng.random() < 0.8:
        index = rng.randrange(len(value))
        return [*value[:index], mutate_structure(value[index], rng), *value[index + 1:]]
    return rng.choice(SURPRISES)


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    if rng.random() < 0.5:
        try:
            document = json.loads(data)
        except ValueError:
            document = None
        if document is not None:
            for _ in range(rng.randint(1, 3)):
                document = mutate_structure(document, rng)
            return json.dumps(document).encode()[:max_size]
    return atheris.Mutate(data, max_size)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="edgepack-bundle-fuzz-"))
    folders = bundles(work)

    def one_input(data: bytes) -> None:
        bundle = folders[1] if b"raspberry-pi" in data else folders[0]
        (bundle / "manifest.json").write_bytes(data)
        try:
            read_manifest(bundle)
            Session(bundle)
        except EdgepackError as error:
            if not error.paragraph() or "\n" in error.paragraph():
                raise AssertionError(f"not a one-paragraph error: {error.paragraph()!r}") from error

    atheris.Setup(sys.argv, one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
