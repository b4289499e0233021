"""Avro schema definitions parsed into a graph, and the Avro resolution rules between them.

AVRO and JSON schemas of the official clients carry an Avro record definition.
Whether data written with one definition can be read with another follows the
Avro specification's "schema resolution" section, as the Java implementation
that Apache's broker runs (Avro's SchemaValidator) applies it; where the two
differ (record names, enum symbols, union branch choice) the Java one wins,
see _Resolver. Logical types are ignored, as Avro itself resolves on the
underlying type.

Pure code: no I/O, no asyncio.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

#: Writer type -> reader types it may be promoted to.
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}

#: Deepest nesting of a definition accepted (guards the parser's recursion).
MAX_DEPTH = 64


class InvalidAvroSchemaError(ValueError):
    """A definition that is not a valid Avro schema."""


@dataclasses.dataclass(eq=False)
class Node:
    """One schema node. Named types (record, enum, fixed) are shared by every reference
    to their name, so a recursive record is a cycle in the graph."""

    kind: str
    name: str = ""
    aliases: frozenset[str] = frozenset()
    fields: tuple[Field, ...] = ()
    symbols: tuple[str, ...] = ()
    enum_default: str | None = None
    size: int = 0
    items: Node | None = None
    branches: tuple[Node, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class Field:
    name: str
    type: Node
    has_default: bool
    aliases: frozenset[str] = frozenset()


def parse(text: str | bytes) -> Node:
    """Parse a JSON Avro definition; raises InvalidAvroSchemaError."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidAvroSchemaError(f"not JSON: {exc}") from exc
    return _Parser().node(value, "", 0)


class _Parser:
    def __init__(self) -> None:
        self.named: dict[str, Node] = {}

    def node(self, value: Any, namespace: str, depth: int) -> Node:
        if depth > MAX_DEPTH:
            raise InvalidAvroSchemaError("definition nested too deeply")
        if isinstance(value, str):
            return self._reference(value, namespace)
        if isinstance(value, list):
            return Node("union", branches=tuple(self.node(v, namespace, depth + 1) for v in value))
        if not isinstance(value, dict) or not isinstance(value.get("type"), str | dict | list):
            raise InvalidAvroSchemaError(f"not a schema: {value!r:.80}")
        kind = value["type"]
        if not isinstance(kind, str):
            return self.node(kind, namespace, depth + 1)
        if kind in ("record", "error", "enum", "fixed"):
            return self._named(value, kind, namespace, depth)
        if kind == "array":
            return Node("array", items=self.node(_required(value, "items"), namespace, depth + 1))
        if kind == "map":
            return Node("map", items=self.node(_required(value, "values"), namespace, depth + 1))
        return self._reference(kind, namespace)

    def _reference(self, name: str, namespace: str) -> Node:
        if name in PRIMITIVES:
            return Node(name)
        for candidate in (_full_name(name, namespace), name):
            if candidate in self.named:
                return self.named[candidate]
        raise InvalidAvroSchemaError(f"unknown type {name!r}")

    def _named(self, value: dict[str, Any], kind: str, namespace: str, depth: int) -> Node:
        name = _required(value, "name")
        own_namespace = value.get("namespace", namespace) if "." not in name else namespace
        full = _full_name(name, own_namespace or "")
        if "." in full:
            own_namespace = full.rsplit(".", 1)[0]
        aliases = frozenset(_full_name(a, own_namespace or "") for a in value.get("aliases", []))
        node = Node("record" if kind == "error" else kind, name=full, aliases=aliases)
        self.named[full] = node
        if kind in ("record", "error"):
            node.fields = tuple(self._field(f, own_namespace or "", depth)
                                for f in _required(value, "fields"))
        elif kind == "enum":
            node.symbols = tuple(_required(value, "symbols"))
            node.enum_default = value.get("default")
        else:
            node.size = int(_required(value, "size"))
        return node

    def _field(self, value: Any, namespace: str, depth: int) -> Field:
        if not isinstance(value, dict):
            raise InvalidAvroSchemaError(f"not a field: {value!r:.80}")
        return Field(str(_required(value, "name")), self.node(_required(value, "type"), namespace,
                                                              depth + 1),
                     "default" in value, frozenset(value.get("aliases", [])))


def _required(value: dict[str, Any], key: str) -> Any:
    if key not in value:
        raise InvalidAvroSchemaError(f"{value.get('type', 'schema')} without {key!r}")
    return value[key]


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def read_problems(writer: Node, reader: Node) -> list[str]:
    """Why data written with `writer` cannot be read with `reader` (empty: it can)."""
    return _Resolver().check(writer, reader, "")


class _Resolver:
    """Avro's resolving reader (Java's Resolver, which Apache's SchemaValidator runs through
    ResolvingGrammarGenerator), keeping only what makes the grammar report an error:
    - record names are not compared (Avro leaves that check out), fields match by name or
      reader alias, and a reader field the writer lacks needs a default;
    - enum and fixed names must match (or be a reader alias); an enum symbol the reader
      lacks is not an error when checking (Avro only fails when such a value is read);
    - a writer union resolves branch by branch; a reader union takes the first branch of
      the writer's type (named types: same name, else for records the first that resolves,
      preferring the same short name), else the first promotion."""

    def __init__(self) -> None:
        #: Pairs of records being checked higher up: assumed compatible (recursion).
        self.assumed: set[tuple[int, int]] = set()

    def check(self, writer: Node, reader: Node, where: str) -> list[str]:
        if writer.kind == "union":
            if reader.kind == "union" and _union_equivalent(writer, reader, set()):
                return []
            return [p for b in writer.branches for p in self.check(b, reader, where)]
        if writer.kind == reader.kind:
            return self._same_kind(writer, reader, where)
        if reader.kind == "union":
            branch = self._branch(writer, reader)
            if branch is None:
                return [(f"{where or 'schema'}: writer type {_describe(writer)} matches no branch "
                         f"of the reader's union")]
            return self.check(writer, branch, where)
        if reader.kind in PROMOTIONS.get(writer.kind, ()):
            return []
        return [f"{where or 'schema'}: {_describe(writer)} cannot be read as {_describe(reader)}"]

    def _same_kind(self, writer: Node, reader: Node, where: str) -> list[str]:
        if writer.kind in PRIMITIVES:
            return []
        if writer.kind in ("array", "map"):
            assert writer.items is not None and reader.items is not None
            return self.check(writer.items, reader.items, f"{where}[]")
        if writer.kind in ("enum", "fixed") and not _names_match(writer, reader):
            return [(f"{where or 'schema'}: {writer.kind} {writer.name} cannot be read as "
                     f"{reader.kind} {reader.name}")]
        if writer.kind == "fixed" and writer.size != reader.size:
            return [(f"{where or 'schema'}: fixed {writer.name} has size {writer.size}, the reader "
                     f"expects {reader.size}")]
        if writer.kind == "enum":
            return []
        return self._record(writer, reader, where)

    def _branch(self, writer: Node, reader: Node) -> Node | None:
        structural: Node | None = None
        for branch in reader.branches:
            if branch.kind != writer.kind:
                continue
            if writer.kind not in ("record", "enum", "fixed"):
                return branch
            if writer.name == branch.name or writer.name in branch.aliases:
                return branch
            resolves = writer.kind == "record" and not _Resolver().check(writer, branch, "")
            if resolves and (structural is None or _short(writer.name) == _short(branch.name)):
                structural = branch
        if structural is not None:
            return structural
        promoted = PROMOTIONS.get(writer.kind, frozenset())
        return next((b for b in reader.branches if b.kind in promoted), None)

    def _record(self, writer: Node, reader: Node, where: str) -> list[str]:
        key = (id(writer), id(reader))
        if key in self.assumed:
            return []
        self.assumed.add(key)
        by_name = {f.name: f for f in writer.fields}
        problems: list[str] = []
        for field in reader.fields:
            path = f"{where}.{field.name}" if where else field.name
            written = by_name.get(field.name) or next(
                (by_name[a] for a in sorted(field.aliases) if a in by_name), None)
            if written is not None:
                problems += self.check(written.type, field.type, path)
            elif not field.has_default:
                problems.append(f"{path}: field added without a default value")
        return problems


def _union_equivalent(writer: Node, reader: Node, seen: set[tuple[int, int]]) -> bool:
    """Avro reads a union written with an equivalent union without resolving it."""
    if writer.kind != reader.kind:
        return False
    if writer.kind in ("record", "enum", "fixed") and _short(writer.name) != _short(reader.name):
        return False
    if writer.kind in PRIMITIVES:
        return True
    if writer.kind in ("array", "map"):
        assert writer.items is not None and reader.items is not None
        return _union_equivalent(writer.items, reader.items, seen)
    if writer.kind == "fixed":
        return writer.size == reader.size
    if writer.kind == "enum":
        return writer.symbols == reader.symbols
    if writer.kind == "union":
        return len(writer.branches) == len(reader.branches) and all(
            _union_equivalent(w, r, seen) for w, r in zip(writer.branches, reader.branches))
    key = (id(writer), id(reader))
    if key in seen:
        return True
    seen.add(key)
    return len(writer.fields) == len(reader.fields) and all(
        w.name == r.name and _union_equivalent(w.type, r.type, seen)
        for w, r in zip(writer.fields, reader.fields))


def _names_match(writer: Node, reader: Node) -> bool:
    """Enum and fixed names: equal full names, or the writer's is one of the reader's aliases."""
    return writer.name == reader.name or writer.name in reader.aliases


def _describe(node: Node) -> str:
    return f"{node.kind} {node.name}" if node.name else node.kind
