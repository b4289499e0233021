"""Partition counts are bounded (maxNumPartitionsPerPartitionedTopic): no admin call can make
the broker build millions of partition names, and listings stay quick."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pulsar_common.wire import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Http

NS = "/admin/v2/persistent/public/default"
#: The broker's default maxNumPartitionsPerPartitionedTopic (see docs/design-choices.md).
DEFAULT_MAX_PARTITIONS = 10_000


def test_partition_counts_beyond_the_limit_or_a_java_int_are_refused(http: Http,
                                                                      unique: str) -> None:
    path = f"{NS}/huge-{unique}/partitions"
    too_big = http.call("PUT", path, raw=b"9223372036854775808")
    assert too_big.status == 400 and too_big.reason
    over = http.put(path, 1_000_000)
    assert (over.status, over.reason) == (
        406, f"Number of partitions should be less than or equal to {DEFAULT_MAX_PARTITIONS}")
    assert http.get(path).json() == {"partitions": 0}
    assert http.put(path, 2).status == 204
    assert http.post(path, DEFAULT_MAX_PARTITIONS + 1).status == 406
    assert http.get(path).json() == {"partitions": 2}
    assert http.delete(path).status == 204


def test_auto_created_partition_count_is_bounded_too(http: Http, unique: str) -> None:
    ns = f"/admin/v2/namespaces/public/auto-{unique}"
    assert http.put(ns).status == 204
    override = {"allowAutoTopicCreation": True, "topicType": "partitioned",
                "defaultNumPartitions": 1_000_000}
    assert http.post(ns + "/autoTopicCreation", override).status == 406
    override["defaultNumPartitions"] = 2**63
    assert http.post(ns + "/autoTopicCreation", override).status == 400
    assert http.get(ns + "/autoTopicCreation").status == 204
    assert http.delete(ns).status == 204


def test_namespace_listings_stay_quick_after_refused_partition_counts(
        http: Http, unique: str, raw_connection: Callable[[], Any]) -> None:
    ns = f"public/big-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    base = f"/admin/v2/persistent/{ns}"
    http.call("PUT", f"{base}/a/partitions", raw=b"9223372036854775808")
    http.put(f"{base}/b/partitions", 1_000_000)
    assert http.put(f"{base}/c/partitions", 3).status == 204

    started = time.monotonic()
    listed = http.get(f"/admin/v2/namespaces/{ns}/topics").json()
    assert listed == [f"persistent://{ns}/c-partition-{i}" for i in range(3)]
    cnx = raw_connection()
    command = pb.BaseCommand(type=pb.BaseCommand.GET_TOPICS_OF_NAMESPACE)
    command.getTopicsOfNamespace.namespace = ns
    command.getTopicsOfNamespace.request_id = cnx.next_request_id()
    reply = cnx.request(command)
    assert list(reply.command.getTopicsOfNamespaceResponse.topics) == listed
    assert http.delete(f"/admin/v2/namespaces/{ns}?force=true").status == 204
    assert time.monotonic() - started < 10
