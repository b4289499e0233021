"""Commands whose dependencies come with an extra of the pulsar-py distribution.

A broker or bookie install (`pip install pulsar-py`) carries no Spark, no
kopf and no official client wheel; `pulsar sql`, `pulsar operator`,
`pulsar-client` and `pulsar-perf` need the `spark`, `operator` and `cli`
extras. Without them they stop with one line naming the extra to install
instead of an ImportError traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from pulsar_common import errors

DISTRIBUTION = "pulsar-py"


def install_hint(extra: str) -> str:
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def require(extra: str, *modules: str) -> None:
    """Import `modules`; raise ConfigError naming `extra` when one of them is not installed.

    Only a module of the list itself being absent counts: an ImportError
    from inside an installed package is a real bug and propagates.
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] != module.split(".")[0]:
                raise
            raise errors.ConfigError(
                f"needs the {extra!r} extra ({module} is not installed): {install_hint(extra)}"
            ) from exc


def _run_tool(prog: str, target: str, extra: str, modules: Sequence[str]) -> int:
    try:
        require(extra, *modules)
    except errors.ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    module_name, _, func_name = target.partition(":")
    return int(getattr(importlib.import_module(module_name), func_name)() or 0)


def pulsar_client() -> int:
    """The `pulsar-client` console script: produce and consume with the official client."""
    return _run_tool("pulsar-client", "pulsar_client_tools.client.main:main", "cli", ("pulsar",))


def pulsar_perf() -> int:
    """The `pulsar-perf` console script: load generation with the official client."""
    return _run_tool("pulsar-perf", "pulsar_client_tools.perf.main:main", "cli", ("pulsar",))
