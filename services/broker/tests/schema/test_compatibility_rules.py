"""The Avro resolution rules and the strategies, as pure functions (no broker)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_broker.schema import avro, compatibility, errors, records


def record(*fields: dict[str, Any], name: str = "User") -> records.SchemaData:
    definition = {"type": "record", "name": name, "namespace": "test", "fields": list(fields)}
    return records.SchemaData("AVRO", json.dumps(definition).encode())


def field(name: str, kind: Any, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, **extra}


def compatible(old: records.SchemaData, new: records.SchemaData, strategy: str) -> bool:
    try:
        compatibility.check([old], new, strategy)
    except errors.IncompatibleSchemaError:
        return False
    return True


V0 = record(field("name", "string"))
WITH_DEFAULT = record(field("name", "string"), field("email", ["null", "string"], default=None))
WITHOUT_DEFAULT = record(field("name", "string"), field("age", "int"))


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [
    (V0, WITH_DEFAULT, True, True),         # added with default: readable both ways
    (V0, WITHOUT_DEFAULT, False, True),     # the new reader needs age, old data lacks it
    (WITHOUT_DEFAULT, V0, True, False),     # removed: the old reader needs age
    (WITH_DEFAULT, V0, True, True),         # removed a field that has a default
])
def test_added_and_removed_fields(old: records.SchemaData, new: records.SchemaData,
                                  backward: bool, forward: bool) -> None:
    assert compatible(old, new, "BACKWARD") is backward
    assert compatible(old, new, "FORWARD") is forward
    assert compatible(old, new, "FULL") is (backward and forward)


@pytest.mark.parametrize(("writer", "reader", "ok"), [
    ("int", "long", True), ("int", "double", True), ("long", "float", True),
    ("float", "double", True), ("string", "bytes", True), ("bytes", "string", True),
    ("long", "int", False), ("double", "float", False), ("string", "int", False),
    ("string", ["null", "string"], True), (["null", "string"], "string", False),
    (["int", "string"], ["long", "string", "null"], True),
    ({"type": "array", "items": "int"}, {"type": "array", "items": "long"}, True),
    ({"type": "map", "values": "long"}, {"type": "map", "values": "int"}, False),
    ({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8}, False),
    ({"type": "enum", "name": "E", "symbols": ["A"]},
     {"type": "enum", "name": "E", "symbols": ["A", "B"]}, True),
    # A symbol the reader lacks fails only when such a value is read: Avro's validator, and
    # so Apache's broker, accepts the schema.
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]},
     {"type": "enum", "name": "E", "symbols": ["A"]}, True),
    ({"type": "enum", "name": "E", "symbols": ["A"]},
     {"type": "enum", "name": "Other", "symbols": ["A"]}, False),
    ({"type": "enum", "name": "E", "symbols": ["A"]},
     {"type": "enum", "name": "Other", "aliases": ["E"], "symbols": ["A"]}, True),
    ({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "G", "size": 4}, False),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]},
     {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"}, True),
])
def test_type_resolution(writer: Any, reader: Any, ok: bool) -> None:
    problems = avro.read_problems(avro.parse(json.dumps(writer)), avro.parse(json.dumps(reader)))
    assert (not problems) is ok, problems


def test_record_names_are_not_compared() -> None:
    """Avro's resolver leaves the record name check out, so Apache's broker accepts a
    renamed record whose fields resolve."""
    assert compatible(V0, record(field("name", "string"), name="Person"), "FULL")
    assert not compatible(V0, record(field("nom", "string"), name="Person"), "BACKWARD")


def _avro(definition: dict[str, Any]) -> records.SchemaData:
    return records.SchemaData("AVRO", json.dumps(definition).encode())


def _rec(name: str, *fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "test", "fields": list(fields)}


# What Apache's broker (Avro's SchemaValidator) answers, per strategy: BACKWARD (new reads
# old), FORWARD (old reads new); FULL is both.
APACHE_CASES = [
    ("nullable field made required",
     _rec("A", field("f", ["null", "string"])), _rec("B", field("f", "string")),
     False, True),
    ("required field made nullable",
     _rec("A", field("f", "string")), _rec("A", field("f", ["null", "string"])),
     True, False),
    ("same fields, another record name, defaults added",
     _rec("Order", field("sku", "string"), field("n", "int")),
     _rec("OrderV2", field("sku", "string", default="x"), field("n", "int", default=1)),
     True, True),
    ("record renamed and a field added with a default",
     _rec("A", field("f", "string")),
     _rec("B", field("f", "string"), field("g", ["null", "int"], default=None)), True, True),
    ("record renamed and a field added without a default",
     _rec("A", field("f", "string")), _rec("B", field("f", "string"), field("g", "int")),
     False, True),
    ("nested record renamed inside a union",
     _rec("A", field("inner", ["null", _rec("In", field("x", "int"))])),
     _rec("A", field("inner", ["null", _rec("In2", field("x", "long"))])), True, False),
    ("int widened to long", _rec("A", field("f", "int")), _rec("A", field("f", "long")),
     True, False),
    ("enum renamed", _rec("A", field("e", {"type": "enum", "name": "E", "symbols": ["X"]})),
     _rec("A", field("e", {"type": "enum", "name": "E2", "symbols": ["X"]})), False, False),
    ("enum symbol removed",
     _rec("A", field("e", {"type": "enum", "name": "E", "symbols": ["X", "Y"]})),
     _rec("A", field("e", {"type": "enum", "name": "E", "symbols": ["X"]})), True, True),
    ("string to int", _rec("A", field("f", "string")), _rec("A", field("f", "int")),
     False, False),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"),
                         [case[1:] for case in APACHE_CASES],
                         ids=[case[0] for case in APACHE_CASES])
def test_apache_verdicts(old: dict[str, Any], new: dict[str, Any], backward: bool,
                         forward: bool) -> None:
    assert compatible(_avro(old), _avro(new), "BACKWARD") is backward
    assert compatible(_avro(old), _avro(new), "FORWARD") is forward
    assert compatible(_avro(old), _avro(new), "FULL") is (backward and forward)


def test_renamed_field_through_alias() -> None:
    renamed = record(field("full_name", "string", aliases=["name"]))
    assert compatible(V0, renamed, "BACKWARD")
    assert not compatible(V0, renamed, "FORWARD")


def test_recursive_records_resolve() -> None:
    node = {"type": "record", "name": "Node", "fields": [
        field("value", "int"), field("next", ["null", "Node"], default=None)]}
    wider = json.loads(json.dumps(node))
    wider["fields"][0]["type"] = "long"
    old = records.SchemaData("AVRO", json.dumps(node).encode())
    new = records.SchemaData("AVRO", json.dumps(wider).encode())
    assert compatible(old, new, "BACKWARD") and not compatible(old, new, "FORWARD")


def test_transitive_checks_every_version() -> None:
    v1 = record(field("name", "string"), field("age", "int", default=0))
    v2 = record(field("name", "string"), field("age", "int"))
    compatibility.check([V0, v1], v2, "BACKWARD")  # v2 reads v1 data
    with pytest.raises(errors.IncompatibleSchemaError, match="age"):
        compatibility.check([V0, v1], v2, "BACKWARD_TRANSITIVE")  # but not v0 data


def test_always_strategies_and_other_types() -> None:
    text = records.SchemaData("STRING", b"")
    assert compatible(V0, WITHOUT_DEFAULT, "ALWAYS_COMPATIBLE")
    assert not compatible(V0, WITH_DEFAULT, "ALWAYS_INCOMPATIBLE")
    assert not compatible(V0, text, "FULL")
    assert compatible(text, records.SchemaData("STRING", b""), "FULL")
    proto = records.SchemaData("PROTOBUF", b'{"a": 1}')
    assert not compatible(proto, records.SchemaData("PROTOBUF", b'{"a": 2}'), "FULL")
    compatibility.check([], WITHOUT_DEFAULT, "ALWAYS_INCOMPATIBLE")  # the first is always fine


def test_same_schema_ignores_json_layout_and_invalid_is_refused() -> None:
    spaced = records.SchemaData("AVRO", json.dumps(json.loads(V0.data), indent=4).encode())
    assert compatibility.same_schema(V0, spaced)
    assert not compatibility.same_schema(V0, records.SchemaData("JSON", V0.data))
    with pytest.raises(errors.InvalidSchemaDefinitionError):
        compatibility.validate(records.SchemaData("AVRO", b'{"type": "record", "name": "X"}'))
    with pytest.raises(errors.InvalidSchemaDefinitionError):
        compatibility.validate(records.SchemaData("JSON", b'"nope"'))


def test_strategy_resolution() -> None:
    assert compatibility.resolve_strategy("UNDEFINED", "FULL") == "FULL"
    assert compatibility.resolve_strategy(None, "backward") == "BACKWARD"
    assert compatibility.resolve_strategy("FORWARD_TRANSITIVE", "FULL") == "FORWARD_TRANSITIVE"


# Generated schemas: rules that hold for any record.

PRIMITIVE = st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes",
                             "string"])
TYPES = st.recursive(
    PRIMITIVE,
    lambda inner: st.one_of(
        st.builds(lambda t: {"type": "array", "items": t}, inner),
        st.builds(lambda t: {"type": "map", "values": t}, inner),
        st.lists(inner.filter(lambda t: not isinstance(t, list)), min_size=1, max_size=3,
                 unique_by=json.dumps)),
    max_leaves=4)
NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=5,
                 unique=True)


@st.composite
def records_(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [field(name, draw(TYPES)) for name in draw(NAMES)]


@settings(max_examples=60, deadline=None)
@given(records_())
def test_any_record_is_fully_compatible_with_itself(fields: list[dict[str, Any]]) -> None:
    schema = record(*fields)
    node = avro.parse(schema.data)
    assert avro.read_problems(node, node) == []
    compatibility.check([schema], schema, "FULL_TRANSITIVE")


@settings(max_examples=60, deadline=None)
@given(records_(), st.data())
def test_fields_added_with_defaults_are_fully_compatible(fields: list[dict[str, Any]],
                                                          data: st.DataObject) -> None:
    taken = {f["name"] for f in fields}
    extra = data.draw(NAMES.map(lambda names: [n for n in names if n not in taken]))
    evolved = fields + [field(n, ["null", "string"], default=None) for n in extra]
    compatibility.check([record(*fields)], record(*evolved), "FULL")


@settings(max_examples=60, deadline=None)
@given(records_(), st.data())
def test_a_field_added_without_default_breaks_backward_only(fields: list[dict[str, Any]],
                                                            data: st.DataObject) -> None:
    new_type = data.draw(TYPES)
    old, new = record(*fields), record(*fields, field("zz_added", new_type))
    assert compatible(old, new, "FORWARD")
    assert not compatible(old, new, "BACKWARD")
