"""Layering: the pure reconcile cores import no I/O library and no adapter."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "pulsar_operator"
CORES = ["naming", "plan", "conditions", "cluster_spec", "cluster_config", "workloads", "cluster_components",
         "cluster_reconcile", "tenant_namespace", "function_spec", "function_reconcile", "diffing"]
FORBIDDEN = {"aiohttp", "kopf", "kmock", "asyncio", "socket", "subprocess"}
ADAPTERS = {"kube", "admin", "applier", "leader", "handlers", "services", "cli", "process", "emulation"}


def imported(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "pulsar_operator":
                names |= {f"pulsar_operator.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("module", CORES)
def test_pure_cores_import_no_io_and_no_adapter(module: str) -> None:
    names = imported(module)
    assert not {n.split(".")[0] for n in names} & FORBIDDEN, names
    assert not {n.split(".", 1)[1] for n in names if n.startswith("pulsar_operator.")} & ADAPTERS, names


def test_every_module_says_why_it_exists() -> None:
    for path in PACKAGE.glob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), path.name


TEST_ONLY = {"emulation", "kubelet_emulation"}


def test_nothing_in_the_product_imports_the_test_harnesses() -> None:
    """The API emulator and the kubelet harness are for tests and bench/ only: the product
    must not be able to tell that it runs under them."""
    for path in PACKAGE.glob("*.py"):
        if path.stem in TEST_ONLY:
            continue
        names = imported(path.stem)
        assert not {n.split(".")[1] for n in names if n.startswith("pulsar_operator.")} & TEST_ONLY, path.name
    services = PACKAGE.parents[1] / "services"
    for path in services.rglob("*.py"):
        if "tests" in path.parts:
            continue  # tests may name the harness (the layer contracts list its adapters)
        text = path.read_text()
        assert "kubelet_emulation" not in text and "pulsar_operator.emulation" not in text, path
