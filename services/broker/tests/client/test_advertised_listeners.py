"""Advertised listeners with the official client: a client asking for a listener gets that
listener's address, one asking for a listener the broker does not advertise is refused
(binary and HTTP lookups alike)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common.wire import pulsar_api_pb2 as pb


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    """A standalone reachable as 127.0.0.1 (internal) and as localhost (external)."""
    node = broker_testing.StandaloneProcess(tmp_path_factory.mktemp("listeners") / "data",
                                            {"journalSyncData": "false"})
    node.overrides["advertisedListeners"] = (f"internal:pulsar://127.0.0.1:{node.broker_port},"
                                             f"external:pulsar://localhost:{node.broker_port}")
    node.overrides["internalListenerName"] = "internal"
    node.start()
    yield node
    node.stop()


def _lookup(connection, topic: str, listener: str | None):
    command = pb.BaseCommand(type=pb.BaseCommand.LOOKUP)
    command.lookupTopic.topic = topic
    command.lookupTopic.request_id = connection.next_request_id()
    if listener is not None:
        command.lookupTopic.advertised_listener_name = listener
    return connection.request(command).command.lookupTopicResponse


def test_binary_lookups_answer_the_named_listener(raw_connection, standalone, topic):
    connection = raw_connection()
    port = standalone.broker_port
    assert _lookup(connection, topic, None).brokerServiceUrl == f"pulsar://127.0.0.1:{port}"
    assert _lookup(connection, topic, "internal").brokerServiceUrl == f"pulsar://127.0.0.1:{port}"
    assert _lookup(connection, topic, "external").brokerServiceUrl == f"pulsar://localhost:{port}"
    refused = _lookup(connection, topic, "nope")
    assert refused.response == pb.CommandLookupTopicResponse.Failed
    assert refused.error == pb.ServiceNotReady
    assert "the broker do not have nope listener" in refused.message


def test_a_client_with_a_listener_name_produces_and_consumes_through_it(standalone, topic):
    client = pulsar.Client(standalone.service_url, listener_name="external",
                           operation_timeout_seconds=10)
    try:
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        producer.send(b"via external")
        assert consumer.receive(timeout_millis=10_000).data() == b"via external"
    finally:
        client.close()


def test_a_client_asking_for_an_unknown_listener_is_refused(standalone, topic):
    client = pulsar.Client(standalone.service_url, listener_name="nope",
                           operation_timeout_seconds=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    finally:
        client.close()


def test_http_lookups_take_the_listener_from_the_query_or_the_header(standalone, topic):
    url = f"{standalone.web_url}/lookup/v2/topic/{topic.replace('://', '/')}"
    port = standalone.broker_port

    def broker_url(request: urllib.request.Request) -> str:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return str(json.loads(reply.read())["brokerUrl"])

    assert broker_url(urllib.request.Request(url)) == f"pulsar://127.0.0.1:{port}"
    assert (broker_url(urllib.request.Request(f"{url}?listenerName=external"))
            == f"pulsar://localhost:{port}")
    assert (broker_url(urllib.request.Request(url, headers={"X-Pulsar-ListenerName": "external"}))
            == f"pulsar://localhost:{port}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{url}?listenerName=nope", timeout=10)
    assert refused.value.code == 500
