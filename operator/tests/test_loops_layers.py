"""Layering of the controller loops: the planners are pure (no I/O library, no adapter),
and every module says why it exists."""

from __future__ import annotations

import ast
import pathlib

import pytest

LOOPS = pathlib.Path(__file__).resolve().parents[1] / "pulsar_operator" / "loops"
PLANNERS = ["decommission", "autorecovery", "etcd_membership", "report"]
FORBIDDEN = {"aiohttp", "kopf", "kmock", "asyncio", "socket", "subprocess", "time", "random"}
ADAPTERS = {"bookie_admin", "etcd_admin", "driver", "runner", "kube", "admin", "applier", "services", "handlers"}


def imported(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("module", [m for m in PLANNERS if (LOOPS / f"{m}.py").exists()])
def test_planners_import_no_io_and_no_adapter(module: str) -> None:
    names = imported(LOOPS / f"{module}.py")
    assert not {n.split(".")[0] for n in names} & FORBIDDEN, names
    assert not {n.rsplit(".", 1)[-1] for n in names if n.startswith("pulsar_operator")} & ADAPTERS, names


def test_every_loop_module_says_why_it_exists() -> None:
    for path in LOOPS.glob("*.py"):
        assert ast.get_docstring(ast.parse(path.read_text())), path.name
