"""Schema evolutions the official client makes, judged as Apache's broker judges them: its
check is Avro's SchemaValidator (the resolving reader's rules), which matches record
fields by name and does not compare record names."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String

Rest = Callable[..., tuple[int, Any]]


def _topic(ns: str) -> str:
    return f"persistent://{ns}/t-{uuid.uuid4().hex[:10]}"


class Nullable(Record):
    _avro_namespace = "test"
    name = String()                      # ["null", "string"], no default
    age = Integer()


def _named(record_name: str, **fields: Any) -> Any:
    return type(record_name, (Record,), {"_avro_namespace": "test", **fields})


# A second class, as an application would write its next version: another record name.
Required = _named("Required", name=String(required=True), age=Integer())


def test_forward_accepts_a_nullable_field_made_required(
        client: pulsar.Client, namespace: Callable[..., str]) -> None:
    """Old readers (["null", "string"]) read the new writer's "string"; the record's name
    changed with the class, which Apache does not compare."""
    topic = _topic(namespace("FORWARD"))
    first = client.create_producer(topic, schema=AvroSchema(Nullable))
    second = client.create_producer(topic, schema=AvroSchema(Required))
    second.send(Required(name="ann", age=3))
    first.close()
    second.close()


def test_backward_still_refuses_a_nullable_field_made_required(
        client: pulsar.Client, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace("BACKWARD"))
    client.create_producer(topic, schema=AvroSchema(Nullable)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(Required))


def test_the_default_strategy_accepts_the_same_fields_under_another_record_name(
        client: pulsar.Client, namespace: Callable[..., str]) -> None:
    """FULL (the broker's default): a record renamed, with defaults added to its fields."""
    topic = _topic(namespace())
    original = _named("Order", sku=String(required=True), count=Integer(required=True))
    renamed = _named("OrderV2", sku=String(required=True, default="none"),
                     count=Integer(required=True, default=1))
    client.create_producer(topic, schema=AvroSchema(original)).close()
    producer = client.create_producer(topic, schema=AvroSchema(renamed))
    producer.send(renamed(sku="a", count=2))
    producer.close()
