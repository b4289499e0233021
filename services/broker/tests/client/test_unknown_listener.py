"""A broker that advertises no listeners refuses lookups naming one, as Apache does (the
client would otherwise be sent to an address that may not be meant for it)."""

from __future__ import annotations

import pulsar
import pytest
from pulsar_common.wire import pulsar_api_pb2 as pb


def test_a_lookup_naming_a_listener_the_broker_lacks_fails(raw_connection, topic):
    command = pb.BaseCommand(type=pb.BaseCommand.LOOKUP)
    command.lookupTopic.topic = topic
    command.lookupTopic.request_id = 1
    command.lookupTopic.advertised_listener_name = "external"
    refused = raw_connection().request(command).command.lookupTopicResponse
    assert refused.response == pb.CommandLookupTopicResponse.Failed
    assert refused.error == pb.ServiceNotReady
    assert refused.message == "the broker do not have external listener"


def test_the_official_client_with_an_unknown_listener_name_cannot_produce(standalone, topic):
    client = pulsar.Client(standalone.service_url, listener_name="external",
                           operation_timeout_seconds=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(topic)
    finally:
        client.close()
