"""Apache's stats query parameters: subscriptionBacklogSize, getEarliestTimeInBacklog,
getPreciseBacklog, excludePublishers and excludeConsumers, on a topic and summed over a
partitioned topic's partitions."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pulsar

if TYPE_CHECKING:
    from conftest import Http


def _path(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/")


def test_backlog_size_and_earliest_publish_time_of_a_subscription(http: Http,
                                                                  client: pulsar.Client,
                                                                  topic: str) -> None:
    http.put(f"{_path(topic)}/subscription/s")
    before_ms = int(time.time() * 1000)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"message-{i}".encode())
    stats = http.get(f"{_path(topic)}/stats").json()
    sub = stats["subscriptions"]["s"]
    assert sub["backlogSize"] > 0 and sub["msgBacklog"] == 5
    assert "earliestMsgPublishTimeInBacklog" not in sub
    assert http.get(f"{_path(topic)}/stats?subscriptionBacklogSize=false").json()[
        "subscriptions"]["s"]["backlogSize"] == -1
    stats = http.get(f"{_path(topic)}/stats?getEarliestTimeInBacklog=true"
                     "&getPreciseBacklog=true").json()
    earliest = stats["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"]
    assert before_ms <= earliest <= int(time.time() * 1000)
    assert stats["earliestMsgPublishTimeInBacklogs"] == earliest
    assert stats["subscriptions"]["s"]["msgBacklog"] == 5
    consumer = client.subscribe(topic, "s")
    for _ in range(5):
        consumer.acknowledge(consumer.receive(10_000))
    consumer.close()  # flushes the acknowledgements
    stats = http.get(f"{_path(topic)}/stats?getEarliestTimeInBacklog=true").json()
    assert stats["subscriptions"]["s"]["earliestMsgPublishTimeInBacklog"] == 0
    assert stats["subscriptions"]["s"]["backlogSize"] == 0
    assert stats["earliestMsgPublishTimeInBacklogs"] == 0
    producer.close()


def test_partitioned_stats_keep_the_oldest_publish_time_and_list_partitions_on_request(
        http: Http, client: pulsar.Client, topic: str) -> None:
    assert http.put(f"{_path(topic)}/partitions", 2).status == 204
    http.put(f"{_path(topic)}/subscription/s")
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(4):
        producer.send(f"m-{i}".encode())
    each = [http.get(f"{_path(topic)}-partition-{i}/stats?getEarliestTimeInBacklog=true").json()
            for i in range(2)]
    stats = http.get(f"{_path(topic)}/partitioned-stats?getEarliestTimeInBacklog=true"
                     "&perPartition=false").json()
    assert stats["partitions"] == {} and stats["metadata"] == {"partitions": 2}
    assert stats["earliestMsgPublishTimeInBacklogs"] == min(
        p["earliestMsgPublishTimeInBacklogs"] for p in each)
    sub = stats["subscriptions"]["s"]
    assert sub["msgBacklog"] == 4
    assert sub["backlogSize"] == sum(p["subscriptions"]["s"]["backlogSize"] for p in each)
    per_partition = http.get(f"{_path(topic)}/partitioned-stats?subscriptionBacklogSize=false"
                             ).json()["partitions"]
    assert sorted(per_partition) == [f"{topic}-partition-{i}" for i in range(2)]
    assert all(p["subscriptions"]["s"]["backlogSize"] == -1 for p in per_partition.values())
    producer.close()


def test_publishers_and_consumers_can_be_left_out(http: Http, client: pulsar.Client,
                                                  topic: str) -> None:
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic)
    full = http.get(f"{_path(topic)}/stats").json()
    assert len(full["publishers"]) == 1 and len(full["subscriptions"]["s"]["consumers"]) == 1
    lean = http.get(f"{_path(topic)}/stats?excludePublishers=true&excludeConsumers=true").json()
    assert lean["publishers"] == [] and lean["subscriptions"]["s"]["consumers"] == []
    assert lean["subscriptions"]["s"]["msgBacklog"] == full["subscriptions"]["s"]["msgBacklog"]
    producer.close()
    consumer.close()
