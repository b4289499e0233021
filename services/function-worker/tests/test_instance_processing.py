"""`pulsar function-instance` against a real standalone: each processing guarantee, the
Context API, manual acknowledgement, dead letters, metrics."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_functions.testing import receive_all, wait_for

pytestmark = pytest.mark.slow

EXCLAIM = """
import pulsar

class Exclaim(pulsar.Function):
    def process(self, input, context):
        return input + "!"
"""


def test_at_least_once_function_outputs_every_input(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check")
    instance = start_instance(EXCLAIM, {"className": "user_function.Exclaim", "inputs": [source],
                                        "output": sink,
                                        "processingGuarantee": "ATLEAST_ONCE"})
    producer = client.create_producer(source)
    for i in range(20):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    received = receive_all(out, 20)
    assert sorted(m.data() for m in received) == sorted(f"m{i}!".encode() for i in range(20))
    first = next(m for m in received if m.data() == b"m0!")
    assert first.partition_key() == "k0"
    assert first.properties()["__pfn_input_topic__"] == source
    assert instance.stats()["numSuccessfullyProcessed"] == 20


def test_at_most_once_acknowledges_inputs_even_when_the_function_fails(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink = names("in"), names("out")
    out = client.subscribe(sink, "check")
    code = """
def fail_on_odd(input):
    if int(input) % 2:
        raise ValueError(input)
    return input
"""
    instance = start_instance(code, {"className": "user_function.fail_on_odd",
                                     "inputs": [source], "output": sink,
                                     "processingGuarantee": "ATMOST_ONCE"})
    producer = client.create_producer(source)
    for i in range(10):
        producer.send(str(i).encode())
    assert sorted(int(m.data()) for m in receive_all(out, 5)) == [0, 2, 4, 6, 8]
    with pytest.raises(pulsar.Timeout):
        out.receive(timeout_millis=1000)
    stats = instance.stats()
    assert (stats["numReceived"], stats["numUserExceptions"]) == (10, 5)


CONTEXT_REPORT = """
import json
import pulsar

class Report(pulsar.Function):
    def process(self, input, context):
        context.get_logger().info("saw %s", input)
        context.record_metric("seen", 7)
        return json.dumps({
            "input": input,
            "key": context.get_message_key(),
            "eventtime": context.get_message_eventtime(),
            "properties": context.get_message_properties(),
            "topic": context.get_current_message_topic_name(),
            "tenant": context.get_function_tenant(),
            "namespace": context.get_function_namespace(),
            "name": context.get_function_name(),
            "instance": context.get_instance_id(),
            "function_id": context.get_function_id(),
            "message_id": str(context.get_message_id()),
            "user_config": context.get_user_config_map(),
            "greeting": context.get_user_config_value("greeting"),
            "secret": context.get_secret("password"),
            "inputs": context.get_input_topics(),
            "output": context.get_output_topic(),
        })
"""


def test_context_describes_the_message_and_the_function(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink, logs = names("in"), names("out"), names("log")
    out = client.subscribe(sink, "check")
    log_consumer = client.subscribe(logs, "check")
    instance = start_instance(
        CONTEXT_REPORT,
        {"className": "user_function.Report", "inputs": [source], "output": sink,
         "logTopic": logs, "userConfig": {"greeting": "hi"},
         "secretsMap": {"password": "PULSAR_SECRET_PASSWORD"}},
        instance_id=3, env={"PULSAR_SECRET_PASSWORD": "s3cret"})
    client.create_producer(source).send(b"hello", partition_key="k", event_timestamp=1234,
                                        properties={"a": "b"})
    report = json.loads(receive_all(out, 1)[0].data())
    assert report["input"] == "hello" and report["key"] == "k" and report["eventtime"] == 1234
    assert report["properties"] == {"a": "b"} and report["topic"] == source
    assert (report["tenant"], report["namespace"], report["name"]) == ("public", "default", "fn")
    assert report["instance"] == 3 and report["function_id"]
    assert report["user_config"] == {"greeting": "hi"} and report["greeting"] == "hi"
    assert report["secret"] == "s3cret"
    assert report["inputs"] == [source] and report["output"] == sink
    log_line = receive_all(log_consumer, 1)[0]
    assert b"saw hello" in log_line.data()
    assert log_line.properties()["fqfn"] == "public/default/fn"
    metrics_text = instance.get("/metrics").decode()
    assert 'pulsar_function_user_metric_seen{' in metrics_text
    assert 'pulsar_function_received_total{' in metrics_text


def test_manual_ack_leaves_acknowledging_to_the_function(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
    standalone: broker_testing.StandaloneProcess,
) -> None:
    source = names("in")
    code = """
def ack_even(input, context):
    if int(input) % 2 == 0:
        context.ack(context.get_message_id(), context.get_current_message_topic_name())
"""
    instance = start_instance(code, {"className": "user_function.ack_even", "inputs": [source],
                                     "autoAck": False, "subscriptionName": "fn-sub"})
    producer = client.create_producer(source)
    for i in range(6):
        producer.send(str(i).encode())
    wait_for(lambda: instance.stats()["numSuccessfullyProcessed"] == 6, 20, "6 processed")
    stats_url = f"{standalone.web_url}/admin/v2/persistent/public/default/{source.rsplit('/', 1)[1]}/stats"
    wait_for(lambda: broker_testing.get_json(stats_url)["subscriptions"]["fn-sub"]["msgBacklog"] == 3,
             20, "the odd inputs left unacknowledged")


def test_failing_inputs_go_to_the_dead_letter_topic_after_max_retries(
    client: pulsar.Client, names: Callable[[str], str], start_instance: Callable[..., Any],
) -> None:
    source, sink, dead = names("in"), names("out"), names("dlq")
    out = client.subscribe(sink, "check")
    dead_consumer = client.subscribe(dead, "check")
    code = """
def reject_poison(input):
    if input == "poison":
        raise ValueError("poison")
    return input
"""
    instance = start_instance(code, {"className": "user_function.reject_poison",
                                     "inputs": [source], "output": sink,
                                     "maxMessageRetries": 2, "deadLetterTopic": dead})
    producer = client.create_producer(source)
    for value in (b"a", b"poison", b"b"):
        producer.send(value)
    assert sorted(m.data() for m in receive_all(out, 2)) == [b"a", b"b"]
    assert receive_all(dead_consumer, 1, timeout_ms=30_000)[0].data() == b"poison"
    assert instance.stats()["numUserExceptions"] == 3
