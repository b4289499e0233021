"""Layer contracts, checked on every `make test` (the role import-linter plays for kopf).

The imports of every module of the project's packages are read with `ast`
(function bodies included, `if TYPE_CHECKING:` blocks left out, since they
never run) and held to five rules:

1. no import cycles between modules;
2. the broker's packages only import packages of lower layers: the services
   that wire a broker, above the adapters (binary protocol, REST), above load
   balancing and the broker service, above topics, above subscriptions and
   dispatchers, above the managed ledger and the other cores, above the
   shared resources and errors;
3. aiohttp, aetcd, kopf and pyspark only in the adapter modules named here;
4. the wire codec and the broker's pure cores import no asyncio and no
   adapter library, so a test can drive them step by step;
5. the command-line clients (pulsar_client_tools: `pulsar-admin`,
   `pulsar-client`, `pulsar-perf`) reach brokers over the wire only: of the
   project they import pulsar_common alone, and no service imports them
   (pulsar_common.cli.extras loads `pulsar-client` and `pulsar-perf` by name
   for their console scripts, after checking the `cli` extra is installed).

What breaks a rule today and cannot be fixed by whoever owns the code this
session is listed below as a known exception, with the reason; an exception
that no longer happens makes the test fail too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[3]
PACKAGE_ROOTS = [
    "services/common", "services/bookie", "services/broker", "services/proxy",
    "services/client-tools", "services/function-worker", "operator", "spark",
]

#: Cycles that exist today, each as the set of modules in it.
KNOWN_CYCLES: dict[frozenset[str], str] = {}

#: The broker's layers, top first. A module belongs to the first entry that is its name or a
#: package above it; modules of one layer may import each other.
BROKER_LAYERS: list[tuple[str, ...]] = [
    ("pulsar_broker.cli", "pulsar_broker.standalone", "pulsar_broker.cluster_broker",
     "pulsar_broker.local_cluster", "pulsar_broker.metadata_tools", "pulsar_broker.testing"),
    ("pulsar_broker.listeners",),
    ("pulsar_broker.server", "pulsar_broker.web"),
    ("pulsar_broker.loadbalance",),
    ("pulsar_broker.service",),
    ("pulsar_broker.topics",),
    ("pulsar_broker.subscriptions",),
    ("pulsar_broker.managed_ledger", "pulsar_broker.schema", "pulsar_broker.namespace",
     "pulsar_broker.config", "pulsar_broker.packages"),
    ("pulsar_broker.resources", "pulsar_broker.security", "pulsar_broker.errors",
     "pulsar_broker"),
]

#: The command-line clients (`pulsar-admin`, `pulsar-client`, `pulsar-perf`).
CLIENT_TOOLS = "pulsar_client_tools"
#: What of the project the command-line clients may import besides themselves: they talk to
#: brokers and function workers over the wire (`functions localrun` starts `pulsar
#: function-instance` as a child process rather than importing pulsar_functions).
CLIENT_TOOLS_MAY_IMPORT = ("pulsar_common",)

#: Imports from a lower layer up into a higher one that exist today: (importer, imported).
KNOWN_UPWARD_IMPORTS: dict[tuple[str, str], str] = {}

#: Third-party libraries only adapters may import: library -> modules allowed (with the
#: packages below them; a trailing `*` also allows every module whose name starts so).
ADAPTER_LIBRARIES: dict[str, tuple[str, ...]] = {
    "aiohttp": (
        "pulsar_broker.web", "pulsar_broker.listeners", "pulsar_bookie.service",
        "pulsar_bookie.autorecovery.admin", "pulsar_common.http_relay", "pulsar_functions.worker",
        "pulsar_proxy.service", "pulsar_proxy.web", "pulsar_operator.admin",
        "pulsar_operator.emulation", "pulsar_operator.kube", "pulsar_operator.kubelet_emulation",
        "pulsar_operator.loops.bookie_admin", "pulsar_operator.loops.etcd_admin",
        "pulsar_operator.loops.rebalance",
        "pulsar_operator.process",
    ),
    "aetcd": ("pulsar_common.metadata.etcd*",),
    "kopf": ("pulsar_operator.handlers", "pulsar_operator.kube", "pulsar_operator.process"),
    "pyspark": (
        "pulsar_spark.job", "pulsar_spark.schema", "pulsar_spark.segment_reads",
        "pulsar_spark.session", "pulsar_spark.source", "pulsar_spark.stream",
        "pulsar_spark.tables", "pulsar_spark.writer",
    ),
}

#: Adapter-library imports outside the adapters that exist today: (module, library).
KNOWN_ADAPTER_LEAKS: dict[tuple[str, str], str] = {}

#: Cores that take time and randomness as arguments and do no I/O.
PURE_CORES = (
    "pulsar_common.wire",
    "pulsar_broker.managed_ledger.layout",
    "pulsar_broker.managed_ledger.ranges",
    "pulsar_broker.managed_ledger.trimming",
    "pulsar_broker.managed_ledger.stats",
    "pulsar_broker.subscriptions.selection",
    "pulsar_broker.subscriptions.dispatch_rate",
    "pulsar_broker.topics.publish_rate",
    "pulsar_broker.topics.subscribe_rate",
    "pulsar_broker.namespace.isolation",
)
#: What pure cores may import from the project besides each other: records and settings.
CORE_VALUES = (
    "pulsar_common.errors", "pulsar_common.config", "pulsar_broker.managed_ledger.api",
    "pulsar_broker.managed_ledger.config",
)
IO_LIBRARIES = ("asyncio", "aiohttp", "aetcd", "kopf", "pyspark", "kubernetes", "socket",
                "subprocess")


def _module_files() -> dict[str, pathlib.Path]:
    found: dict[str, pathlib.Path] = {}
    for root in PACKAGE_ROOTS:
        for path in (REPO / root).rglob("*.py"):
            relative = path.relative_to(REPO / root)
            if not relative.parts[0].startswith("pulsar_"):
                continue
            name = ".".join(relative.with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Module -> every module or external name it imports at run time."""
    modules = _module_files()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _imports(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit_else(child)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.update(_from_import(child, package, modules))
            visit(child)

    def visit_else(node: ast.If) -> None:
        for child in node.orelse:
            visit(ast.Module(body=[child], type_ignores=[]))

    visit(ast.parse(path.read_text(), str(path)))
    found.discard(name)
    return found


def _from_import(node: ast.ImportFrom, package: str, modules: dict[str, pathlib.Path]) -> set[str]:
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    submodules = {f"{base}.{alias.name}" for alias in node.names} & modules.keys()
    # `from package import module` imports the module; `from module import name` the module.
    return submodules | ({base} if len(submodules) < len(node.names) else set())


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start, first_children in graph.items():
        if start in index:
            continue
        work = [(start, iter(sorted(first_children & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child] & graph.keys()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _is_adapter(name: str, adapter: str) -> bool:
    if adapter.endswith("*"):
        return name.startswith(adapter[:-1])
    return _within(name, adapter)


def _broker_layer(name: str) -> int | None:
    for level, layer in enumerate(BROKER_LAYERS):
        if any(_within(name, member) for member in layer if member != "pulsar_broker"):
            return level
    return len(BROKER_LAYERS) - 1 if name == "pulsar_broker" else None


def test_the_contract_reads_every_package() -> None:
    graph = _graph()
    assert "pulsar_broker.managed_ledger.ledger" in graph
    assert "pulsar_broker.managed_ledger.cursor" in graph["pulsar_broker.managed_ledger.ledger"]


def test_there_are_no_import_cycles_but_the_known_ones() -> None:
    cycles = set(_cycles(_graph()))
    assert cycles - KNOWN_CYCLES.keys() == set(), "new import cycles"
    assert KNOWN_CYCLES.keys() - cycles == set(), "broken cycles: remove them from KNOWN_CYCLES"


def test_the_cursor_does_not_depend_on_the_managed_ledger_it_reads() -> None:
    cursor_imports = _graph()["pulsar_broker.managed_ledger.cursor"]
    assert "pulsar_broker.managed_ledger.ledger" not in cursor_imports


def test_broker_packages_import_only_lower_layers() -> None:
    upward: set[tuple[str, str]] = set()
    unplaced: set[str] = set()
    for importer, imported in _graph().items():
        if not importer.startswith("pulsar_broker"):
            continue
        importer_layer = _broker_layer(importer)
        if importer_layer is None:
            unplaced.add(importer)
            continue
        for name in imported:
            target = _broker_layer(name) if name.startswith("pulsar_broker") else None
            if target is not None and target < importer_layer:
                upward.add((importer, name))
    assert unplaced == set(), "broker modules with no layer: add them to BROKER_LAYERS"
    assert upward - KNOWN_UPWARD_IMPORTS.keys() == set(), "imports up the layers"
    assert KNOWN_UPWARD_IMPORTS.keys() - upward == set(), "gone: remove from KNOWN_UPWARD_IMPORTS"


def test_command_line_clients_import_no_service() -> None:
    graph = _graph()
    assert "pulsar_client_tools.admin.main" in graph
    for importer, imported in graph.items():
        if _within(importer, CLIENT_TOOLS):
            project = {n for n in imported if n.startswith("pulsar_")}
            allowed = (CLIENT_TOOLS, *CLIENT_TOOLS_MAY_IMPORT)
            outside = {n for n in project if not any(_within(n, a) for a in allowed)}
            assert outside == set(), (importer, outside)


def test_no_service_imports_the_command_line_clients() -> None:
    for importer, imported in _graph().items():
        if not _within(importer, CLIENT_TOOLS):
            assert not any(_within(n, CLIENT_TOOLS) for n in imported), importer


def test_adapter_libraries_are_imported_only_by_adapters() -> None:
    leaks: set[tuple[str, str]] = set()
    for importer, imported in _graph().items():
        for library, adapters in ADAPTER_LIBRARIES.items():
            uses = any(_within(name, library) for name in imported)
            if uses and not any(_is_adapter(importer, adapter) for adapter in adapters):
                leaks.add((importer, library))
    assert leaks - KNOWN_ADAPTER_LEAKS.keys() == set(), "adapter libraries outside adapters"
    assert KNOWN_ADAPTER_LEAKS.keys() - leaks == set(), "gone: remove from KNOWN_ADAPTER_LEAKS"


def test_wire_and_pure_cores_do_no_io() -> None:
    for importer, imported in _graph().items():
        if not any(_within(importer, core) for core in PURE_CORES):
            continue
        io = {n for n in imported if any(_within(n, library) for library in IO_LIBRARIES)}
        assert io == set(), (importer, io)
        allowed = PURE_CORES + CORE_VALUES
        outside = {n for n in imported
                   if n.startswith("pulsar_") and not any(_within(n, a) for a in allowed)}
        assert outside == set(), (importer, outside)
