"""Shared fixtures for the operator tests: sample manifests as custom resources."""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CRDS = REPO / "crds"
K8S_VERSION = "1.37.0"


def _load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"].update(namespace="pulsar", uid=f"uid-{body['metadata']['name']}", generation=1)
    return body


@pytest.fixture
def example() -> Callable[[str], dict[str, Any]]:
    """A sample manifest from examples/, as the API server would hand it over."""
    return lambda name: copy.deepcopy(_load(name))


@pytest.fixture
def crd_documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(CRDS.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs
