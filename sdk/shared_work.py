"""Work that the profiles of one multi-profile build share: where two profiles check the model to the same graph,
it is slimmed once and the source's outputs are computed once; where they quantize it alike, mixed precision starts
from the nodes the first one kept in fp32."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from pathlib import Path

import onnx

from edgepack.packager.slim import PassRecord, slim

from .verify import Oracle


def digest(model: onnx.ModelProto) -> str:
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


class SharedWork:
    """Slimmed models and oracles by the digest of the checked model they came from, and mixed precision's choices."""

    def __init__(self) -> None:
        self._slimmed: dict[str, tuple[bytes, list[PassRecord]]] = {}
        self._oracles: dict[Hashable, Oracle] = {}
        self.kept: dict[Hashable, list[str]] = {}
        """The nodes mixed precision kept in fp32, by (quantized model digest, min cosine, providers)."""

    def slim(self, checked: onnx.ModelProto, on_pass: Callable[[str], None], weights: Path | None = None
             ) -> tuple[onnx.ModelProto, list[PassRecord], bool]:
        """The slimmed model (a copy of its own for each caller), its pass records, and whether it was shared.
        `weights`: the folder of the model's external initializers (the same in one run)."""
        key = digest(checked)
        shared = key in self._slimmed
        if not shared:
            slimmed, passes = slim(checked, on_pass=on_pass, weights=weights)
            self._slimmed[key] = (slimmed.SerializeToString(), passes)
        data, passes = self._slimmed[key]
        return onnx.load_from_string(data), passes, shared

    def oracle(self, checked: onnx.ModelProto, options: Hashable, make: Callable[[], Oracle]) -> tuple[Oracle, bool]:
        """The oracle for this checked model and these oracle options, and whether it was shared."""
        key = (digest(checked), options)
        shared = key in self._oracles
        if not shared:
            self._oracles[key] = make()
        return self._oracles[key], shared
