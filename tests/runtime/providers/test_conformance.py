"""onnx's node test cases (1,884, generated in memory from `onnx.backend.test.case` since the onnx wheel no longer
ships their data), run through `onnx.backend.test.BackendTest` once per provider. A case whose nodes a provider
claims must pass; a case it does not claim is skipped with the refusal as the reason. The counts per provider are
printed at the end of the run (see conftest.py)."""

from __future__ import annotations

import importlib.util
import warnings

import onnx
import onnx.backend.test
import pytest
from onnx.backend.test.loader import load_model_tests

from edgepack.runtime.providers import PROVIDERS

from .node_backend import backend_for, claim_refusal
from .unclaimed_cases import TABLE, table

CONFORMANCE_PROVIDERS = ["reference", "openvino", "cpu", "neon", "wasm", "coreml"]


def _available(provider: str) -> bool:
    if provider == "openvino":
        return importlib.util.find_spec("openvino") is not None
    return PROVIDERS[provider].missing() is None


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the case generators warn about overflows they test on purpose
    NODE_CASES = load_model_tests(kind="node")
    for _provider in CONFORMANCE_PROVIDERS:
        if _available(_provider):
            _runner = onnx.backend.test.BackendTest(backend_for(_provider), __name__)
            _node_cases = _runner.test_cases["OnnxBackendNodeModelTest"]
            globals()[f"TestNodeCases_{_provider}"] = type(f"TestNodeCases_{_provider}", (_node_cases,), {})
    # pytest collects any unittest.TestCase a module holds: left here, the last provider's cases would run twice
    del _runner, _node_cases


def test_node_cases_are_all_there() -> None:
    assert len(NODE_CASES) >= 1884


@pytest.mark.parametrize(("provider", "at_least"), [("reference", 1800), ("openvino", 1000), ("cpu", 1030),
                                                  ("coreml", 250)])
def test_provider_claims_at_least(provider: str, at_least: int) -> None:
    """Guards against a claims table that shrinks by accident; that claims are honest is what the cases check."""
    if not _available(provider):
        pytest.skip(f"{provider} is not installed")
    claimed = sum(1 for case in NODE_CASES if claim_refusal(provider, case.model) is None)
    assert claimed >= at_least


def test_the_table_of_unclaimed_cases_is_current() -> None:
    """docs/unclaimed-node-cases.md lists exactly the cases the C core's claims refuse, with their reasons."""
    assert TABLE.read_text() == table(NODE_CASES), "run: python -m tests.runtime.providers.unclaimed_cases --write"
