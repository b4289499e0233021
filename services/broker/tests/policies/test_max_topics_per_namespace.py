"""maxTopicsPerNamespace (namespace policy over broker.conf's maxTopicsPerNamespace, 0: no
limit), enforced as Apache's broker does on topics a producer or consumer would create: the
namespace's persistent topics are counted, each partition of a partitioned topic as one,
system topics neither counted nor limited; past the limit the client gets NotAllowed
"Exceed maximum number of topics in namespace."."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import config as broker_config
from pulsar_broker import testing as broker_testing
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
MESSAGE = "Exceed maximum number of topics in namespace."
#: broker.conf's maxTopicsPerNamespace on the standalone below.
BROKER_LIMIT = 2


@pytest.fixture(scope="module")
def standalone(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    node = broker_testing.StandaloneProcess(tmp_path_factory.mktemp("max-topics") / "data", {
        "journalSyncData": "false",
        "maxTopicsPerNamespace": str(BROKER_LIMIT),
    })
    node.start()
    yield node
    node.stop()


def _producer_error(conn, topic: str) -> pb.CommandError:
    command = pb.BaseCommand(type=T.PRODUCER)
    command.producer.topic = topic
    command.producer.producer_id = 1
    command.producer.request_id = conn.next_request_id()
    reply = conn.request(command)
    assert reply.command.type == T.ERROR, reply.command
    return reply.command.error


def test_the_broker_default_is_no_limit():
    assert broker_config.BrokerConfig().max_topics_per_namespace == 0


def test_a_producer_past_the_limit_is_refused_with_not_allowed(
        client, raw_connection, admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 2)
    client.create_producer(f"persistent://{namespace}/one").close()
    client.subscribe(f"persistent://{namespace}/two", "s").close()
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{namespace}/three")
    error = _producer_error(raw_connection(), f"persistent://{namespace}/three")
    assert (error.error, error.message) == (pb.NotAllowedError, MESSAGE)
    # Existing topics are not affected.
    client.create_producer(f"persistent://{namespace}/one").close()


def test_each_partition_counts_and_partitions_of_existing_topics_are_created(
        client, admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 3)
    partitioned = f"persistent://{namespace}/parted"
    admin.ok("PUT", f"/admin/v2/persistent/{namespace}/parted/partitions", 2)
    client.create_producer(f"persistent://{namespace}/single").close()
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{namespace}/fourth")
    # The partitions were counted with their topic: producing creates them.
    producer = client.create_producer(partitioned)
    producer.send(b"to both partitions")
    producer.send(b"round robin")
    producer.close()


def test_an_auto_created_partitioned_topic_counts_its_partitions(
        client, raw_connection, admin, namespace):
    admin.set_policy(namespace, "autoTopicCreation", {
        "allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 3})
    admin.set_policy(namespace, "maxTopicsPerNamespace", 2)
    topic = f"persistent://{namespace}/three-partitions"
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(topic)
    command = pb.BaseCommand(type=T.PARTITIONED_METADATA)
    command.partitionMetadata.topic = topic
    command.partitionMetadata.request_id = 1
    reply = raw_connection().request(command).command.partitionMetadataResponse
    assert reply.response == pb.CommandPartitionedTopicMetadataResponse.Failed
    assert (reply.error, reply.message) == (pb.NotAllowedError, MESSAGE)
    assert admin.ok("GET", f"/admin/v2/persistent/{namespace}/partitioned") == []


def test_system_topics_are_neither_counted_nor_limited(client, admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 1)
    client.create_producer(f"persistent://{namespace}/__change_events").close()
    client.create_producer(f"persistent://{namespace}/only").close()
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{namespace}/second")


def test_without_a_policy_the_broker_setting_limits(client, admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 1)
    client.create_producer(f"persistent://{namespace}/first").close()
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{namespace}/second")
    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/maxTopicsPerNamespace")
    client.create_producer(f"persistent://{namespace}/second").close()
    with pytest.raises(pulsar.NotAllowedError):
        client.create_producer(f"persistent://{namespace}/third")


def test_a_namespace_policy_of_zero_lifts_the_broker_limit(client, admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 0)
    for index in range(BROKER_LIMIT + 2):
        client.create_producer(f"persistent://{namespace}/many-{index}").close()


def test_admin_creates_past_the_limit_get_412(admin, namespace):
    admin.set_policy(namespace, "maxTopicsPerNamespace", 3)
    base = f"/admin/v2/persistent/{namespace}"
    admin.ok("PUT", f"{base}/made-by-admin")
    # Three partitions would make four topics.
    status, answer = admin.call("PUT", f"{base}/parted/partitions", 3)
    assert (status, answer["reason"]) == (412, MESSAGE)
    admin.ok("PUT", f"{base}/parted/partitions", 2)
    status, answer = admin.call("PUT", f"{base}/one-too-many")
    assert (status, answer["reason"]) == (412, MESSAGE)
    assert admin.ok("GET", f"{base}/partitioned") == [f"persistent://{namespace}/parted"]
