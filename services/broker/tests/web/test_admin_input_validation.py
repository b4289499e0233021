"""Admin and binary input that Apache refuses is refused here too, with a reason, and nothing
of it is stored: relative path steps as names, numbers beyond Java's types, strings or
objects where TenantInfo has arrays, huge topic names and partition indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulsar_common.wire import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Http


def test_relative_path_steps_are_not_names(http: Http, unique: str) -> None:
    tenant = http.put("/admin/v2/tenants/%2e%2e", {"allowedClusters": ["standalone"]})
    assert (tenant.status, tenant.reason) == (412, "Tenant name is not valid")
    assert ".." not in http.get("/admin/v2/tenants").json()
    namespace = http.put("/admin/v2/namespaces/public/%2e%2e")
    assert (namespace.status, namespace.reason) == (412, "Namespace name is not valid")
    assert "public/.." not in http.get("/admin/v2/namespaces/public").json()
    topic = http.put("/admin/v2/persistent/public/default/%2e%2e")
    assert (topic.status, topic.reason) == (412, "Topic name is not valid")
    partitioned = http.put("/admin/v2/persistent/public/default/%2e/partitions", 2)
    assert partitioned.status == 412
    listed = http.get("/admin/v2/persistent/public/default").json()
    assert not [t for t in listed if t.endswith(("/..", "/."))]


def test_a_message_ttl_beyond_a_java_int_is_refused(http: Http, unique: str) -> None:
    ns = f"/admin/v2/namespaces/public/ttl-{unique}"
    assert http.put(ns).status == 204
    huge = http.call("POST", ns + "/messageTTL", raw=b"100000000000000000000000000")
    assert huge.status == 400 and "integer" in huge.reason
    assert http.post(ns + "/messageTTL", -1).status == 412
    assert http.get(ns + "/messageTTL").status == 204
    assert http.post(ns + "/messageTTL", 60).status == 204
    assert http.get(ns + "/messageTTL").json() == 60
    retention = http.post(ns + "/retention", {"retentionTimeInMinutes": 10**26,
                                              "retentionSizeInMB": 10})
    assert retention.status == 400
    assert http.delete(ns).status == 204


def test_tenant_info_fields_must_be_arrays_of_strings(http: Http, unique: str) -> None:
    path = f"/admin/v2/tenants/t-{unique}"
    as_string = http.put(path, {"allowedClusters": "standalone"})
    assert (as_string.status, as_string.reason) == (
        400, "allowedClusters must be a JSON array of strings")
    as_object = http.put(path, {"adminRoles": {"role": "admin"}, "allowedClusters": ["standalone"]})
    assert (as_object.status, as_object.reason) == (
        400, "adminRoles must be a JSON array of strings")
    assert http.get(path).status == 404
    assert http.put(path, {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}).status == 204
    assert http.get(path).json() == {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}
    assert http.delete(path).status == 204


def _producer_error(cnx: Any, topic: str) -> Any:
    command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    command.producer.topic = topic
    command.producer.producer_id = 1
    command.producer.request_id = cnx.next_request_id()
    return cnx.request(command).command


def test_huge_topic_names_and_partition_indexes_are_invalid_topic_names(
        http: Http, unique: str, raw_connection: Callable[[], Any]) -> None:
    cnx = raw_connection()
    huge = f"persistent://public/default/{'x' * (1024 * 1024)}"
    reply = _producer_error(cnx, huge)
    assert reply.type == pb.BaseCommand.ERROR and reply.error.error == pb.InvalidTopicName
    assert len(reply.error.message) < 1000
    too_far = f"persistent://public/default/far-{unique}-partition-99999999999"
    reply = _producer_error(cnx, too_far)
    assert reply.type == pb.BaseCommand.ERROR and reply.error.error == pb.InvalidTopicName
    lookup = pb.BaseCommand(type=pb.BaseCommand.PARTITIONED_METADATA)
    lookup.partitionMetadata.topic = too_far
    lookup.partitionMetadata.request_id = cnx.next_request_id()
    answer = cnx.request(lookup).command.partitionMetadataResponse
    assert answer.response == pb.CommandPartitionedTopicMetadataResponse.Failed
    assert answer.error == pb.InvalidTopicName
    listed = http.get("/admin/v2/persistent/public/default").json()
    assert not [t for t in listed if f"far-{unique}" in t or len(t) > 2000]


def _subscribe(cnx: Any, topic: str, subscription: str) -> Any:
    command = pb.BaseCommand(type=pb.BaseCommand.SUBSCRIBE)
    command.subscribe.topic = topic
    command.subscribe.subscription = subscription
    command.subscribe.subType = pb.CommandSubscribe.Exclusive
    command.subscribe.consumer_id = cnx.next_request_id()
    command.subscribe.request_id = cnx.next_request_id()
    return cnx.request(command).command


def test_empty_relative_and_huge_subscription_names_are_refused(
        http: Http, unique: str, raw_connection: Callable[[], Any]) -> None:
    cnx = raw_connection()
    topic = f"persistent://public/default/subs-{unique}"
    for name, reason in [("", "Empty subscription name"), ("  ", "Empty subscription name"),
                         ("..", "Invalid subscription name"), (".", "Invalid subscription name"),
                         ("s" * 5000, "longer than")]:
        reply = _subscribe(cnx, topic, name)
        assert reply.type == pb.BaseCommand.ERROR, (name[:10], reply)
        assert reply.error.error == pb.NotAllowedError and reason in reply.error.message
        assert "/managed-ledgers" not in reply.error.message
    assert _subscribe(cnx, topic, "fine").type == pb.BaseCommand.SUCCESS
    stats = http.get(f"/admin/v2/persistent/public/default/subs-{unique}/stats").json()
    assert list(stats["subscriptions"]) == ["fine"]
