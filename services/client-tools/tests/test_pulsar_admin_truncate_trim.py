"""`pulsar-admin topics truncate` and `topics trim-topic`, run as processes against the
session's standalone."""

from __future__ import annotations

import json

import pulsar


def test_truncate_clears_every_backlog_and_trim_topic_answers(
        admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-truncate-{unique}"
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(3):
        producer.send(b"x")
    stats = json.loads(admin.ok("topics", "stats", topic))
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 3

    assert admin.ok("topics", "truncate", topic) == ""

    stats = json.loads(admin.ok("topics", "stats", topic))
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 0
    assert admin.ok("topics", "trim-topic", topic) == ""
    producer.send(b"after")
    stats = json.loads(admin.ok("topics", "stats", topic))
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 1
    producer.close()


def test_truncate_and_trim_refuse_what_apache_refuses(admin, unique: str) -> None:
    refused = admin("topics", "truncate", f"non-persistent://public/default/np-{unique}")
    assert refused.returncode != 0
    assert "unsupport truncate" in refused.stderr
    missing = admin("topics", "trim-topic", f"persistent://public/default/missing-{unique}")
    assert missing.returncode != 0
    assert "Topic not found" in missing.stderr
