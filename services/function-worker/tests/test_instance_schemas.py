"""Python functions over Avro and JSON schemas, as Apache's Python runtime runs them: the input's
consumer and the output's producer use the official client's AvroSchema / JsonSchema of the
function's own pulsar.schema.Record classes (inputTypeClassName, outputTypeClassName), so the
function gets and returns Records, the broker registers and checks the topics' schemas, and the
test's producers and consumers are the official client's, with the same Record definitions."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String
from pulsar_broker import testing as broker_testing
from pulsar_functions.testing import http, multipart, receive_all, wait_for

pytestmark = pytest.mark.slow

GREETER = """
from pulsar.schema import Integer, Record, String


class Greeting(Record):
    name = String()
    times = Integer()


class Reply(Record):
    text = String()
    length = Integer()


def greet(greeting):
    if greeting.name == "bad":
        return "not a Reply"
    text = " ".join(["hello " + greeting.name] * greeting.times)
    return Reply(text=text, length=len(text))
"""


class Greeting(Record):
    name = String()
    times = Integer()


class Reply(Record):
    text = String()
    length = Integer()


def schema_type(standalone: broker_testing.StandaloneProcess, topic: str) -> str:
    status, body = http("GET", f"{standalone.web_url}/admin/v2/schemas/"
                               f"{topic.split('://', 1)[1]}/schema")
    assert status == 200, body
    return str(json.loads(body)["type"])


@pytest.mark.parametrize(("kind", "schema_of"), [("AVRO", AvroSchema), ("JSON", JsonSchema)])
def test_a_function_reads_and_writes_records_of_its_own_schema_classes(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
    standalone: broker_testing.StandaloneProcess, kind: str, schema_of: Any,
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check", schema=schema_of(Reply))
    start_instance(GREETER, {
        "className": "user_function.greet", "inputs": [source], "output": sink,
        "customSchemaInputs": {source: kind}, "inputTypeClassName": "Greeting",
        "outputSchemaType": kind, "outputTypeClassName": "user_function.Reply"})
    producer = client.create_producer(source, schema=schema_of(Greeting))
    producer.send(Greeting(name="ada", times=2))
    reply = receive_all(out, 1)[0].value()
    assert isinstance(reply, Reply)
    assert (reply.text, reply.length) == ("hello ada hello ada", 19)
    assert (schema_type(standalone, source), schema_type(standalone, sink)) == (kind, kind)


def test_an_input_spec_schema_type_and_a_return_value_the_schema_refuses(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check", schema=AvroSchema(Reply))
    instance = start_instance(GREETER, {
        "className": "user_function.greet", "inputs": [], "output": sink,
        "inputSpecs": {source: {"schemaType": "AVRO"}}, "inputTypeClassName": "Greeting",
        "outputSchemaType": "AVRO", "outputTypeClassName": "Reply", "maxMessageRetries": 1})
    producer = client.create_producer(source, schema=AvroSchema(Greeting))
    producer.send(Greeting(name="bad", times=1))
    producer.send(Greeting(name="bob", times=1))
    assert receive_all(out, 1)[0].value().text == "hello bob"
    wait_for(lambda: instance.stats()["numUserExceptions"] >= 1, 30,
             "the str returned for an Avro output counted as the function's error")


def test_a_producer_of_another_schema_is_refused_on_the_function_s_input(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    start_instance(GREETER, {
        "className": "user_function.greet", "inputs": [source], "output": sink,
        "customSchemaInputs": {source: "AVRO"}, "inputTypeClassName": "Greeting",
        "outputSchemaType": "AVRO", "outputTypeClassName": "Reply"})
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(source, schema=AvroSchema(Reply))


def test_a_function_created_through_the_worker_keeps_its_schema_settings(
    client: pulsar.Client, names: Callable[[str], str],
    standalone: broker_testing.StandaloneProcess,
) -> None:
    source, sink = names("in"), names("out")
    name = f"greeter-{uuid.uuid4().hex[:6]}"
    base = f"{standalone.web_url}/admin/v3/functions/public/default/{name}"
    document = {"className": "greeter.greet", "inputs": [], "customSchemaInputs": {source: "AVRO"},
                "inputTypeClassName": "Greeting", "output": sink, "outputSchemaType": "AVRO",
                "outputTypeClassName": "Reply"}
    status, reply = http("POST", base, *multipart({
        "functionConfig": (None, json.dumps(document).encode()),
        "data": ("greeter.py", GREETER.encode())}))
    assert status == 204, reply
    try:
        status, stored = http("GET", base)
        assert json.loads(stored)["inputTypeClassName"] == "Greeting"
        out = client.subscribe(sink, "check", schema=AvroSchema(Reply))
        wait_for(lambda: json.loads(http("GET", f"{base}/status")[1]).get("numRunning") == 1, 60,
                 "the instance runs")
        client.create_producer(source, schema=AvroSchema(Greeting)).send(Greeting(name="cy", times=1))
        assert receive_all(out, 1)[0].value().text == "hello cy"
    finally:
        assert http("DELETE", base)[0] == 204
