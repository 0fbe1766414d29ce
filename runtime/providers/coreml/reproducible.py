"""Makes a saved `.mlpackage` byte-identical across builds of the same model: coremltools names the package's items
with random UUIDs and serializes the spec's maps in hash order, so each save differs and an app's Swift package
(whose version is the package's hash) would recompile the model on every build."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

MANIFEST = "Manifest.json"
ITEM_NAMESPACE = uuid.UUID("7b1f0a62-4c1e-4a8e-9a57-0e9c3d2b6f10")
"""UUIDv5 namespace of edgepack's package item identifiers (an item's identifier is derived from its path)."""


def make_reproducible(package: Path) -> None:
    """Rewrites `package`'s Manifest.json with identifiers derived from each item's path, and its model spec with
    deterministic serialization (map entries in key order)."""
    manifest_path = package / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    renamed = {key: str(uuid.uuid5(ITEM_NAMESPACE, item["path"])) for key, item in manifest["itemInfoEntries"].items()}
    manifest["itemInfoEntries"] = {renamed[key]: item for key, item in manifest["itemInfoEntries"].items()}
    manifest["rootModelIdentifier"] = renamed[manifest["rootModelIdentifier"]]
    manifest_path.write_text(json.dumps(manifest, indent=4, sort_keys=True) + "\n")
    root = manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]
    _serialize_deterministically(package / "Data" / root["path"])


def _serialize_deterministically(spec_path: Path) -> None:
    from coremltools.proto import Model_pb2

    spec = Model_pb2.Model()
    spec.ParseFromString(spec_path.read_bytes())
    spec_path.write_bytes(spec.SerializeToString(deterministic=True))
