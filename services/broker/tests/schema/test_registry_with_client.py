"""The schema registry seen through the official client and the admin REST API."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import _pulsar
import pulsar
import pytest
from pulsar.schema import AvroSchema, Float, Integer, JsonSchema, Record, String, StringSchema

Rest = Callable[..., tuple[int, Any]]


def _user(**extra: Any) -> type:
    """A record named User (evolutions of a schema keep the record's name)."""
    fields = {"_avro_namespace": "test", "name": String(required=True),
              "age": Integer(required=True), **extra}
    return type("User", (Record,), fields)


User: Any = _user()
UserWithEmail: Any = _user(email=String(required_default=True))  # ["null","string"], default null
UserAgeAsText = _user(age=String(required=True))
UserWithScore = _user(score=Float(required=True))  # no default: old data cannot be read


def _version(message: pulsar.Message) -> int:
    """The schema version the producer stamped on the message (PRODUCER_SUCCESS's)."""
    value: int = message._message.int_schema_version()
    return value


def _topic(ns: str) -> str:
    return f"persistent://{ns}/t-{uuid.uuid4().hex[:10]}"


def _schema_path(topic: str) -> str:
    return "/admin/v2/schemas/" + topic.removeprefix("persistent://")


def test_avro_producer_registers_version_zero_and_consumer_decodes(
        client: pulsar.Client, rest: Rest, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())
    consumer = client.subscribe(topic, "s", schema=AvroSchema(User))
    producer = client.create_producer(topic, schema=AvroSchema(User))
    producer.send(User(name="ann", age=41))
    message = consumer.receive(timeout_millis=10_000)
    assert message.value().name == "ann" and message.value().age == 41
    assert _version(message) == 0

    status, body = rest("GET", _schema_path(topic) + "/schema")
    assert status == 200
    assert body["version"] == 0 and body["type"] == "AVRO"
    assert json.loads(body["data"])["name"] == "User"
    assert isinstance(body["timestamp"], int) and body["properties"] == {}


def test_compatible_evolution_gets_version_one_and_old_data_reads_with_writer_schema(
        client: pulsar.Client, rest: Rest, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace("BACKWARD"))
    old = client.create_producer(topic, schema=AvroSchema(User))
    old.send(User(name="old", age=1))
    new = client.create_producer(topic, schema=AvroSchema(UserWithEmail))
    new.send(UserWithEmail(name="new", age=2, email="n@x"))
    status, body = rest("GET", _schema_path(topic) + "/schemas")
    assert status == 200
    assert [v["version"] for v in body["getSchemaResponses"]] == [0, 1]
    status, body = rest("GET", _schema_path(topic) + "/schema/0")
    assert status == 200 and "email" not in body["data"]

    # The client fetches version 0 by GET_SCHEMA to decode the old message.
    reader = client.create_reader(topic, pulsar.MessageId.earliest,
                                  schema=AvroSchema(UserWithEmail))
    first, second = (reader.read_next(timeout_millis=10_000) for _ in range(2))
    assert (_version(first), _version(second)) == (0, 1)
    assert (first.value().name, first.value().email) == ("old", None)
    assert (second.value().name, second.value().email) == ("new", "n@x")


def test_full_strategy_accepts_field_with_default(
        client: pulsar.Client, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())  # UNDEFINED: the broker's default, FULL
    client.create_producer(topic, schema=AvroSchema(User))
    client.create_producer(topic, schema=AvroSchema(UserWithEmail))
    # The same schema again is the same version, not a new one.
    again = client.create_producer(topic, schema=AvroSchema(User))
    again.send(User(name="x", age=3))


@pytest.mark.parametrize("evolved", [UserAgeAsText, UserWithScore])
def test_incompatible_schema_is_refused(client: pulsar.Client, rest: Rest,
                                        namespace: Callable[..., str], evolved: type) -> None:
    topic = _topic(namespace("BACKWARD"))
    client.create_producer(topic, schema=AvroSchema(User))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(evolved))
    status, body = rest("GET", _schema_path(topic) + "/schemas")
    assert [v["version"] for v in body["getSchemaResponses"]] == [0]
    status, body = rest("POST", _schema_path(topic) + "/compatibility",
                        {"type": "AVRO", "schema": json.dumps(evolved.schema())})
    assert status == 200 and body == {"isCompatibility": False,
                                      "schemaCompatibilityStrategy": "BACKWARD"}


def test_other_type_is_refused_and_bytes_producer_allowed(
        client: pulsar.Client, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())
    client.create_producer(topic, schema=StringSchema())
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=JsonSchema(User))
    # No schema (BYTES) on a topic with a schema: allowed, validation not enforced.
    client.create_producer(topic).send(b"raw")


def test_always_incompatible_namespace(client: pulsar.Client,
                                       namespace: Callable[..., str]) -> None:
    topic = _topic(namespace("ALWAYS_INCOMPATIBLE"))
    client.create_producer(topic, schema=AvroSchema(User))
    client.create_producer(topic, schema=AvroSchema(User))  # the same schema is fine
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserWithEmail))


def test_consumer_schema_checked_against_topic(client: pulsar.Client,
                                               namespace: Callable[..., str]) -> None:
    ns = namespace()
    topic = _topic(ns)
    client.create_producer(topic, schema=AvroSchema(User)).send(User(name="a", age=1))
    client.subscribe(topic, "ok", schema=AvroSchema(UserWithEmail)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, "bad", schema=AvroSchema(UserWithScore))
    # A consumer on an idle topic without schema registers its own.
    idle = _topic(ns)
    client.subscribe(idle, "first", schema=JsonSchema(User)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(idle, schema=StringSchema())


def test_partitions_share_the_partitioned_topics_schema(
        client: pulsar.Client, rest: Rest, namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())
    status, _ = rest("PUT", "/admin/v2/persistent/" + topic.removeprefix("persistent://")
                     + "/partitions", 3)
    assert status == 204
    producer = client.create_producer(topic, schema=AvroSchema(User))
    for i in range(6):
        producer.send(User(name=f"u{i}", age=i), partition_key=str(i))
    status, body = rest("GET", _schema_path(topic) + "/schemas")
    assert [v["version"] for v in body["getSchemaResponses"]] == [0]


def test_get_schema_through_the_client(client: pulsar.Client,
                                       namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())
    with pytest.raises(pulsar.TopicNotFound):
        client._client.get_schema_info(topic, 0)  # no schema: Apache's "no-schema" answer
    client.create_producer(topic, schema=AvroSchema(User))
    client.create_producer(topic, schema=AvroSchema(UserWithEmail))
    info = client._client.get_schema_info(topic, 1)
    assert info.schema_type() == _pulsar.SchemaType.AVRO
    assert sorted(f["name"] for f in json.loads(info.schema())["fields"]) == ["age", "email", "name"]
    older = client._client.get_schema_info(topic, 0)
    assert sorted(f["name"] for f in json.loads(older.schema())["fields"]) == ["age", "name"]


def test_rest_upload_get_delete(client: pulsar.Client, rest: Rest,
                                namespace: Callable[..., str]) -> None:
    topic = _topic(namespace())
    path = _schema_path(topic)
    assert rest("GET", path + "/schema")[0] == 404
    payload = {"type": "AVRO", "schema": json.dumps(User.schema()), "properties": {"k": "v"}}
    assert rest("POST", path + "/schema", payload) == (200, {"version": {"version": 0}})
    assert rest("POST", path + "/version", payload) == (200, {"version": 0})
    status, body = rest("GET", path + "/schema/0")
    assert status == 200 and body["properties"] == {"k": "v"}
    assert rest("GET", path + "/schema/7")[0] == 404
    # A producer with the uploaded schema uses version 0.
    client.create_producer(topic, schema=AvroSchema(User)).send(User(name="z", age=9))
    incompatible = {"type": "AVRO", "schema": json.dumps(UserWithScore.schema())}
    status, body = rest("POST", path + "/schema", incompatible)
    assert status == 409 and "score" in body["reason"]
    assert rest("POST", path + "/schema", {"type": "AVRO", "schema": "{oops"})[0] == 422

    assert rest("DELETE", path + "/schema") == (200, {"version": 1})
    status, body = rest("GET", path + "/schema")
    assert status == 404 and body["reason"] == "Schema is deleted"
    # After a delete any schema may be registered; versions continue.
    status, body = rest("POST", path + "/schema", incompatible)
    assert (status, body) == (200, {"version": {"version": 2}})
    assert rest("DELETE", path + "/schema?force=true")[0] == 200
    assert rest("GET", path + "/schemas") == (200, {"getSchemaResponses": []})
