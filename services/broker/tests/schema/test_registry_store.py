"""The registry over a real metadata store (RocksDB): versions, deletes, concurrent adds."""

from __future__ import annotations

import asyncio
import json
import pathlib
from collections.abc import AsyncIterator

import pytest
from pulsar_common import naming
from pulsar_common.metadata import factory

from pulsar_broker.schema import errors, records, registry

TOPIC = naming.TopicName.parse("persistent://public/default/orders")


def avro(*names: str) -> records.SchemaData:
    fields = [{"name": n, "type": ["null", "string"], "default": None} for n in names]
    return records.SchemaData(
        "AVRO", json.dumps({"type": "record", "name": "O", "fields": fields}).encode())


@pytest.fixture
async def schemas(tmp_path: pathlib.Path) -> AsyncIterator[registry.SchemaRegistry]:
    store = await factory.create_store(f"rocksdb:{tmp_path / 'md'}")
    yield registry.SchemaRegistry(store, now_ms=lambda: 1234)
    await store.close()


async def test_versions_are_shared_by_partitions(schemas: registry.SchemaRegistry) -> None:
    assert await schemas.put_if_absent(TOPIC, avro("a"), "FULL") == 0
    assert await schemas.put_if_absent(TOPIC.partition(2), avro("a"), "FULL") == 0
    assert await schemas.put_if_absent(TOPIC.partition(1), avro("a", "b"), "FULL") == 1
    stored = await schemas.get(TOPIC)
    assert stored is not None and (stored.version, stored.timestamp_ms) == (1, 1234)


async def test_concurrent_adds_take_distinct_versions(schemas: registry.SchemaRegistry) -> None:
    versions = await asyncio.gather(*(schemas.put_if_absent(TOPIC, avro(*"abcdef"[:i]), "BACKWARD")
                                      for i in range(1, 6)))
    assert sorted(versions) == [0, 1, 2, 3, 4]
    assert [s.version for s in await schemas.history(TOPIC)] == [0, 1, 2, 3, 4]


async def test_delete_marks_and_checks_restart(schemas: registry.SchemaRegistry) -> None:
    await schemas.put_if_absent(TOPIC, avro("a"), "ALWAYS_INCOMPATIBLE")
    with pytest.raises(errors.IncompatibleSchemaError):
        await schemas.put_if_absent(TOPIC, avro("b"), "ALWAYS_INCOMPATIBLE")
    assert await schemas.delete(TOPIC) == 1
    assert await schemas.delete(TOPIC) is None  # already deleted
    assert not await schemas.has_schema(TOPIC)
    assert await schemas.put_if_absent(TOPIC, avro("b"), "ALWAYS_INCOMPATIBLE") == 2
    # A schema equal to one before the mark is a new version, not the old one.
    assert await schemas.existing_version(TOPIC, avro("a")) is None
    assert await schemas.delete(TOPIC, force=True) == 0
    assert await schemas.history(TOPIC) == ()


async def test_consumer_checks(schemas: registry.SchemaRegistry) -> None:
    with pytest.raises(errors.IncompatibleSchemaError, match="does not have schema"):
        await schemas.check_consumer(TOPIC, avro("a"), "FULL")
    await schemas.put_if_absent(TOPIC, avro("a"), "FULL")
    await schemas.check_consumer(TOPIC, avro("a", "b"), "FULL")
    strict = records.SchemaData("AVRO", json.dumps({"type": "record", "name": "O", "fields": [
        {"name": "z", "type": "int"}]}).encode())
    with pytest.raises(errors.IncompatibleSchemaError):
        await schemas.check_consumer(TOPIC, strict, "FULL")
    await schemas.check_consumer(TOPIC, strict, "ALWAYS_COMPATIBLE")


def test_wire_version_and_payload_shapes() -> None:
    assert records.encode_version(1) == b"\0" * 7 + b"\1"
    assert records.decode_version(records.encode_version(2**40)) == 2**40
    assert records.decode_version(b"") is None
    payload = records.from_payload({"type": "key_value", "schema": json.dumps(
        {"key": {"type": "string"}, "value": "x"}), "properties": {"p": 1}})
    assert payload.type == "KEY_VALUE" and payload.properties == (("p", "1"),)
    shown = json.loads(records.display_data(payload))
    assert shown == {"key": {"type": "string"}, "value": "x"}
    with pytest.raises(records.InvalidSchemaError):
        records.from_payload({"type": "NOPE"})
