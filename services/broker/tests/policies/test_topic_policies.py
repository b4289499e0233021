"""Topic-level policies: set on one topic (every partition of it) over its namespace's, through
Apache's REST paths and `pulsar-admin topicPolicies`, enforced on the official client."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pulsar
import pytest


def topic_admin(web_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                          env={**os.environ, "PULSAR_ADMIN_URL": web_url},
                          capture_output=True, text=True, timeout=60, check=False)


def test_topic_policies_round_trip_through_the_cli(standalone, namespace):
    topic = f"persistent://{namespace}/cli"
    url = standalone.web_url
    assert topic_admin(url, "topicPolicies", "set-retention", topic, "-t", "2h",
                       "-s", "1G").returncode == 0
    got = topic_admin(url, "topicPolicies", "get-retention", topic)
    assert json.loads(got.stdout) == {"retentionTimeInMinutes": 120, "retentionSizeInMB": 1024}
    assert topic_admin(url, "topicPolicies", "set-message-ttl", topic, "-t", "90").returncode == 0
    assert json.loads(topic_admin(url, "topicPolicies", "get-message-ttl", topic).stdout) == 90
    assert topic_admin(url, "topicPolicies", "set-publish-rate", topic, "-m", "50").returncode == 0
    rate = json.loads(topic_admin(url, "topicPolicies", "get-publish-rate", topic).stdout)
    assert rate == {"publishThrottlingRateInMsg": 50, "publishThrottlingRateInByte": -1}
    assert topic_admin(url, "topicPolicies", "remove-message-ttl", topic).returncode == 0
    assert topic_admin(url, "topicPolicies", "get-message-ttl", topic).stdout == ""
    bad = topic_admin(url, "topicPolicies", "set-max-producers", topic, "-p", "-3")
    assert bad.returncode == 1


def test_a_topic_limit_applies_to_that_topic_only_and_goes_with_remove(client, admin, namespace):
    limited, other = f"persistent://{namespace}/limited", f"persistent://{namespace}/other"
    admin.ok("POST", f"/admin/v2/persistent/{namespace}/limited/maxProducers", 1)
    first = client.create_producer(limited)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(limited)
    client.create_producer(other).close()
    client.create_producer(other).close()
    admin.ok("DELETE", f"/admin/v2/persistent/{namespace}/limited/maxProducers")
    client.create_producer(limited).close()  # the loaded topic got its namespace's back
    first.close()


def test_a_topic_value_wins_over_its_namespace_and_covers_every_partition(
        client, admin, namespace):
    admin.set_policy(namespace, "maxConsumersPerSubscription", 1)
    topic = f"persistent://{namespace}/parted"
    admin.ok("PUT", f"/admin/v2/persistent/{namespace}/parted/partitions", 2)
    admin.ok("POST", f"/admin/v2/persistent/{namespace}/parted/maxConsumersPerSubscription", 2)
    shared = pulsar.ConsumerType.Shared
    two = [client.subscribe(topic, "sub", consumer_type=shared) for _ in range(2)]
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=shared)
    for consumer in two:
        consumer.close()
