"""non-persistent:// topics with the official client: delivered to the consumers connected
now, dropped (and counted) for a consumer without permits, never stored."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing


@pytest.fixture
def np_topic() -> str:
    return f"non-persistent://public/default/np-{uuid.uuid4().hex[:12]}"


def get(standalone: broker_testing.StandaloneProcess, path: str) -> Any:
    with urllib.request.urlopen(standalone.web_url + path, timeout=30) as reply:
        return json.loads(reply.read())


def put(standalone: broker_testing.StandaloneProcess, path: str, body: Any) -> None:
    request = urllib.request.Request(standalone.web_url + path, data=json.dumps(body).encode(),
                                     method="PUT", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


def admin_path(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/")


def test_connected_consumers_get_messages_with_ledger_zero_ids(standalone, client, np_topic):
    first = client.subscribe(np_topic, "a")
    second = client.subscribe(np_topic, "b")
    producer = client.create_producer(np_topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(5)]
    assert [i.ledger_id() for i in ids] == [0] * 5
    assert len({i.entry_id() for i in ids}) == 5
    for consumer in (first, second):
        got = broker_testing.receive_all(consumer, 5)
        assert [m.data() for m in got] == [f"m{i}".encode() for i in range(5)]


def test_messages_sent_before_a_consumer_connects_are_not_kept(standalone, client, np_topic):
    producer = client.create_producer(np_topic, batching_enabled=False)
    producer.send(b"lost")
    consumer = client.subscribe(np_topic, "late",
                                initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"kept")
    assert consumer.receive(10_000).data() == b"kept"
    assert broker_testing.nothing_more(consumer)


def test_a_consumer_without_permits_has_messages_dropped_and_counted(
        standalone, client, np_topic):
    slow = client.subscribe(np_topic, "slow", receiver_queue_size=1)
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(200):
        producer.send(f"m{i}".encode())
    received = []
    while (message := _receive_or_none(slow)) is not None:
        received.append(message)
    assert 0 < len(received) < 200
    stats = get(standalone, admin_path(np_topic) + "/stats")
    assert stats["msgInCounter"] == 200
    subscription = stats["subscriptions"]["slow"]
    assert subscription["msgDropRate"] > 0
    assert subscription["msgOutCounter"] == len(received)
    assert stats["storageSize"] == 0


def _receive_or_none(consumer: pulsar.Consumer) -> pulsar.Message | None:
    try:
        message = consumer.receive(500)
    except pulsar.Timeout:
        return None
    consumer.acknowledge(message)
    return message


def test_shared_subscription_spreads_messages_over_its_consumers(standalone, client, np_topic):
    consumers = [client.subscribe(np_topic, "shared", consumer_type=pulsar.ConsumerType.Shared)
                 for _ in range(2)]
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(20):
        producer.send(f"m{i}".encode())
    counts = []
    for consumer in consumers:
        n = 0
        while _receive_or_none(consumer) is not None:
            n += 1
        counts.append(n)
    assert sum(counts) == 20 and all(counts)


def test_partitioned_non_persistent_topic(standalone, client, np_topic):
    put(standalone, admin_path(np_topic) + "/partitions", 3)
    assert get(standalone, admin_path(np_topic) + "/partitions") == {"partitions": 3}
    consumer = client.subscribe(np_topic, "all")
    producer = client.create_producer(np_topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"m{i}".encode(), partition_key=f"k{i}")
    got = broker_testing.receive_all(consumer, 30)
    assert sorted(m.data() for m in got) == sorted(f"m{i}".encode() for i in range(30))
    assert {m.message_id().partition() for m in got} == {0, 1, 2}
    listed = get(standalone, "/admin/v2/non-persistent/public/default")
    assert {f"{np_topic}-partition-{i}" for i in range(3)} <= set(listed)
    partitioned = get(standalone, admin_path(np_topic) + "/partitioned-stats")
    assert partitioned["msgInCounter"] == 30


def test_seek_and_read_compacted_are_refused(standalone, client, np_topic):
    consumer = client.subscribe(np_topic, "s")
    with pytest.raises(pulsar.PulsarException):
        consumer.seek(pulsar.MessageId.earliest)
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(np_topic, "compacted", is_read_compacted=True)


def test_non_persistent_topics_are_listed_and_have_stats(standalone, client, np_topic):
    client.subscribe(np_topic, "s")
    client.create_producer(np_topic).send(b"x")
    assert np_topic in get(standalone, "/admin/v2/non-persistent/public/default")
    assert np_topic not in get(standalone, "/admin/v2/persistent/public/default")
    stats = get(standalone, admin_path(np_topic) + "/stats")
    assert stats["publishers"][0]["msgDropRate"] == 0.0
    assert "s" in stats["subscriptions"]
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(standalone, admin_path(np_topic + "-none") + "/stats")
    assert missing.value.code == 404


@pytest.mark.parametrize(("mode", "expected"), [
    (pulsar.RegexSubscriptionMode.PersistentOnly, {"persistent"}),
    (pulsar.RegexSubscriptionMode.NonPersistentOnly, {"non-persistent"}),
    (pulsar.RegexSubscriptionMode.AllTopics, {"persistent", "non-persistent"}),
])
def test_regex_subscription_mode_picks_the_topics_of_its_kind(standalone, client, mode, expected):
    prefix = f"rx-{uuid.uuid4().hex[:8]}"
    names = {"persistent": f"persistent://public/default/{prefix}-p",
             "non-persistent": f"non-persistent://public/default/{prefix}-n"}
    # A non-persistent topic exists while it is loaded: a subscriber keeps it so.
    keeper = client.subscribe(names["non-persistent"], "keeper")
    client.create_producer(names["persistent"]).send(b"before")
    consumer = client.subscribe(re.compile(f"public/default/{prefix}-.*"), "regex",
                                regex_subscription_mode=mode)
    producers = {kind: client.create_producer(name) for kind, name in names.items()}
    for kind, producer in producers.items():
        producer.send(kind.encode())
    got = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (message := _receive_or_none(consumer)) is not None:
        got.add(message.data().decode())
    assert got == expected
    consumer.close()
    keeper.close()


def test_pulsar_admin_topics_list_shows_both_kinds_unless_asked(standalone, client, np_topic):
    client.subscribe(np_topic, "s")

    def listed(*options: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-m", "pulsar_client_tools.admin.main", "topics", "list",
             "public/default", *options],
            env={**os.environ, "PULSAR_ADMIN_URL": standalone.web_url},
            capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert np_topic in listed()
    assert np_topic in listed("-td", "non_persistent")
    assert np_topic not in listed("--topic-domain", "persistent")
