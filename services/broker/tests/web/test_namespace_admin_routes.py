"""The namespace admin routes Apache has beyond the common policies: properties, the
anti-affinity and bookie-affinity groups, subscription types, the schema settings, delayed
delivery, topic hash positions, subscription permissions and per-bundle clear-backlog and
unsubscribe, through REST and `pulsar-admin namespaces`."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pulsar
import pytest
from pulsar_broker import testing as broker_testing

if TYPE_CHECKING:
    from conftest import Http

FULL_BUNDLE = "0x00000000_0xffffffff"


def admin(web_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                          env={**os.environ, "PULSAR_ADMIN_URL": web_url},
                          capture_output=True, text=True, timeout=60, check=False)


def ok(web_url: str, *args: str) -> str:
    result = admin(web_url, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def namespace(http: Http, unique: str) -> str:
    """A namespace of one bundle, so a test knows which bundle its topics are in."""
    name = f"public/nsroutes-{unique}"
    assert http.put(f"/admin/v2/namespaces/{name}",
                    {"bundles": {"numBundles": 1}}).status == 204
    return name


def test_properties_are_set_read_and_removed_one_by_one_or_all_together(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    base = f"/admin/v2/namespaces/{namespace}"
    assert http.put(f"{base}/property/owner/team-a").status == 204
    # A property's value is answered as bare text, as Apache's String resources do.
    assert http.get(f"{base}/property/owner").body == b"team-a"
    assert http.get(f"{base}/property/missing").status == 204
    assert http.put(f"{base}/properties", {"tier": "gold", "owner": "team-b"}).status == 204
    assert http.get(f"{base}/properties").json() == {"owner": "team-b", "tier": "gold"}
    assert http.put(f"{base}/properties", ["not", "a", "map"]).status == 400
    removed = http.delete(f"{base}/property/tier")
    assert (removed.status, removed.body) == (200, b"gold")
    assert http.delete(f"{base}/property/tier").status == 204
    assert http.delete(f"{base}/properties").status == 204
    assert http.get(f"{base}/properties").json() == {}
    assert http.get("/admin/v2/namespaces/public/no-such-ns/properties").status == 404

    url = standalone.web_url
    ok(url, "namespaces", "set-property", namespace, "-k", "env", "-v", "prod")
    assert ok(url, "namespaces", "get-property", namespace, "-k", "env").strip() == "prod"
    ok(url, "namespaces", "set-properties", namespace, "-p", "a=1,b=2")
    # A map prints as Apache's pulsar-admin prints one: `key    value` lines.
    assert sorted(ok(url, "namespaces", "get-properties", namespace).splitlines()) == [
        "a    1", "b    2", "env    prod"]
    assert ok(url, "namespaces", "remove-property", namespace, "-k", "a").strip() == "1"
    ok(url, "namespaces", "clear-properties", namespace)
    assert ok(url, "namespaces", "get-properties", namespace) == ""


def test_anti_affinity_group_is_stored_and_its_namespaces_listed(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str,
        unique: str) -> None:
    base = f"/admin/v2/namespaces/{namespace}"
    assert http.get(f"{base}/antiAffinity").status == 204
    empty = http.post(f"{base}/antiAffinity", " ")
    assert (empty.status, empty.reason) == (412, "antiAffinityGroup can't be empty")
    url = standalone.web_url
    group = f"group-{unique}"
    ok(url, "namespaces", "set-anti-affinity-group", namespace, "-g", group)
    assert ok(url, "namespaces", "get-anti-affinity-group", namespace).strip() == group
    members = ok(url, "namespaces", "get-anti-affinity-namespaces", "-c", "standalone",
                 "-g", group.upper(), "-p", "public")
    assert members.splitlines() == [namespace]
    unknown = http.get(f"/admin/v2/namespaces/no-such-cluster/antiAffinity/{group}?tenant=public")
    assert unknown.status == 412
    ok(url, "namespaces", "delete-anti-affinity-group", namespace)
    assert http.get(f"{base}/antiAffinity").status == 204
    assert http.get(
        f"/admin/v2/namespaces/standalone/antiAffinity/{group}?tenant=public").json() == []


def test_bookie_affinity_group_is_stored_with_apaches_field_names(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    path = f"/admin/v2/namespaces/{namespace}/persistence/bookieAffinity"
    assert http.get(path).status == 204
    url = standalone.web_url
    ok(url, "namespaces", "set-bookie-affinity-group", namespace, "-pg", "rack-a,rack-b",
       "-sg", "rack-c")
    assert http.get(path).json() == {"bookkeeperAffinityGroupPrimary": "rack-a,rack-b",
                                     "bookkeeperAffinityGroupSecondary": "rack-c"}
    assert json.loads(ok(url, "namespaces", "get-bookie-affinity-group", namespace)) == {
        "bookkeeperAffinityGroupPrimary": "rack-a,rack-b",
        "bookkeeperAffinityGroupSecondary": "rack-c"}
    assert http.post(path, {"bookkeeperAffinityGroupPrimary": ""}).status == 400
    ok(url, "namespaces", "delete-bookie-affinity-group", namespace)
    assert http.get(path).status == 204


def test_subscription_types_enabled_are_stored_as_a_set_of_type_names(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    path = f"/admin/v2/namespaces/{namespace}/subscriptionTypesEnabled"
    assert http.get(path).json() == []
    url = standalone.web_url
    ok(url, "namespaces", "set-subscription-types-enabled", namespace, "-t",
       "Shared,Failover,Shared")
    assert http.get(path).json() == ["Failover", "Shared"]
    assert json.loads(ok(url, "namespaces", "get-subscription-types-enabled", namespace)) == [
        "Failover", "Shared"]
    assert http.post(path, ["Broadcast"]).status == 400
    assert admin(url, "namespaces", "set-subscription-types-enabled", namespace,
                 "-t", "Broadcast").returncode != 0
    ok(url, "namespaces", "remove-subscription-types-enabled", namespace)
    assert http.get(path).json() == []


def test_schema_settings_answer_the_broker_defaults_until_set(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    base = f"/admin/v2/namespaces/{namespace}"
    url = standalone.web_url
    assert http.get(f"{base}/schemaAutoUpdateCompatibilityStrategy").json() == "Full"
    ok(url, "namespaces", "set-schema-autoupdate-strategy", namespace, "-c", "backward")
    assert http.get(f"{base}/schemaAutoUpdateCompatibilityStrategy").json() == "Backward"
    assert ok(url, "namespaces", "get-schema-autoupdate-strategy",
              namespace).strip() == "BACKWARD"
    ok(url, "namespaces", "set-schema-autoupdate-strategy", namespace, "-d")
    assert http.get(f"{base}/schemaAutoUpdateCompatibilityStrategy").json() == (
        "AutoUpdateDisabled")
    assert http.put(f"{base}/schemaAutoUpdateCompatibilityStrategy", "Sideways").status == 400

    # Unset, isAllowAutoUpdateSchema is broker.conf's isAllowAutoUpdateSchemaEnabled (true).
    assert http.get(f"{base}/isAllowAutoUpdateSchema").json() is True
    ok(url, "namespaces", "set-is-allow-auto-update-schema", namespace, "-d")
    assert json.loads(ok(url, "namespaces", "get-is-allow-auto-update-schema",
                         namespace)) is False

    ok(url, "namespaces", "set-schema-validation-enforce", namespace, "-e")
    assert json.loads(ok(url, "namespaces", "get-schema-validation-enforce", namespace)) is True
    ok(url, "namespaces", "set-schema-validation-enforce", namespace, "-d")
    # applied: the broker's isSchemaValidationEnforced (false) when the namespace's is false.
    assert json.loads(ok(url, "namespaces", "get-schema-validation-enforce", namespace,
                         "--applied")) is False


def test_delayed_delivery_commands_use_apaches_policy_record(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    url = standalone.web_url
    ok(url, "namespaces", "set-delayed-delivery", namespace, "-e", "-t", "2s")
    assert http.get(f"/admin/v2/namespaces/{namespace}/delayedDelivery").json() == {
        "active": True, "tickTime": 2000, "maxDeliveryDelayInMillis": 0}
    assert json.loads(ok(url, "namespaces", "get-delayed-delivery", namespace))["active"]
    ok(url, "namespaces", "remove-delayed-delivery", namespace)
    assert http.get(f"/admin/v2/namespaces/{namespace}/delayedDelivery").status == 204
    assert admin(url, "namespaces", "set-delayed-delivery", namespace).returncode != 0


def test_topic_hash_positions_of_a_bundle(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    plain = f"persistent://{namespace}/plain"
    assert http.put(f"/admin/v2/persistent/{namespace}/plain").status == 204
    assert http.put(f"/admin/v2/persistent/{namespace}/parted/partitions", 2).status == 204
    path = f"/admin/v2/namespaces/{namespace}/{FULL_BUNDLE}/topicHashPositions"
    named = http.get(f"{path}?topics=plain&topics=parted").json()
    assert named["namespace"] == namespace and named["bundle"] == FULL_BUNDLE
    assert set(named["topicHashPositions"]) == {
        plain, f"persistent://{namespace}/parted-partition-0",
        f"persistent://{namespace}/parted-partition-1"}
    assert all(0 <= h <= 0xFFFFFFFF for h in named["topicHashPositions"].values())
    assert plain in http.get(path).json()["topicHashPositions"]
    printed = ok(standalone.web_url, "namespaces", "get-topic-positions", namespace,
                 "-b", FULL_BUNDLE, "-tl", "plain")
    assert json.loads(printed)["topicHashPositions"] == {
        plain: named["topicHashPositions"][plain]}


def test_subscription_permissions_are_listed(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    url = standalone.web_url
    assert http.get(f"/admin/v2/namespaces/{namespace}/permissions/subscription").json() == {}
    ok(url, "namespaces", "grant-subscription-permission", namespace, "--subscription", "audit",
       "--roles", "alice,bob")
    assert ok(url, "namespaces", "subscription-permission", namespace).splitlines() == [
        "audit    [alice, bob]"]
    # Apache's short flags too.
    ok(url, "namespaces", "revoke-subscription-permission", namespace, "-s", "audit", "-r", "bob")
    ok(url, "namespaces", "grant-subscription-permission", namespace, "-s", "ops", "-rs", "carol")
    assert ok(url, "namespaces", "subscription-permission", namespace).splitlines() == [
        "audit    [alice]", "ops    [carol]"]


def _backlog(http: Http, topic: str, subscription: str) -> int:
    stats = http.get(f"/admin/v2/{topic.replace('://', '/')}/stats").json()
    return int(stats["subscriptions"][subscription]["msgBacklog"])


def test_clear_backlog_and_unsubscribe_of_one_bundle(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str,
        client: pulsar.Client) -> None:
    topic = f"persistent://{namespace}/backlog"
    consumer = client.subscribe(topic, "keep")
    consumer.close()
    producer = client.create_producer(topic)
    for i in range(3):
        producer.send(f"m-{i}".encode())
    producer.close()
    assert _backlog(http, topic, "keep") == 3
    url = standalone.web_url
    ok(url, "namespaces", "clear-backlog", namespace, "-b", FULL_BUNDLE, "-s", "keep", "-force")
    deadline = time.monotonic() + 10
    while _backlog(http, topic, "keep") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _backlog(http, topic, "keep") == 0
    ok(url, "namespaces", "unsubscribe", namespace, "-b", FULL_BUNDLE, "-s", "keep")
    subscriptions = http.get(f"/admin/v2/persistent/{namespace}/backlog/subscriptions").json()
    assert "keep" not in subscriptions


def test_split_bundle_by_type_picks_the_bundle_with_the_most_topics(
        standalone: broker_testing.StandaloneProcess, http: Http, unique: str) -> None:
    namespace = f"public/nssplit-{unique}"
    assert http.put(f"/admin/v2/namespaces/{namespace}",
                    {"bundles": {"numBundles": 2}}).status == 204
    for i in range(5):
        assert http.put(f"/admin/v2/persistent/{namespace}/t-{i}").status == 204
    before = http.get(f"/admin/v2/namespaces/{namespace}/bundles").json()["boundaries"]
    counts = {}
    for lower, upper in itertools.pairwise(before):
        path = f"/admin/v2/namespaces/{namespace}/{lower}_{upper}/topicHashPositions"
        counts[(lower, upper)] = len(http.get(path).json()["topicHashPositions"])
    largest = max(counts, key=lambda r: counts[r])
    # HOT needs traffic in the load reports; a namespace nobody uses has no hot bundle.
    hot = http.put(f"/admin/v2/namespaces/{namespace}/HOT/split")
    assert (hot.status, hot.reason) == (404, "Bundle range HOT not found")
    ok(standalone.web_url, "namespaces", "split-bundle", namespace, "-bt", "LARGEST")
    after = http.get(f"/admin/v2/namespaces/{namespace}/bundles").json()
    assert after["numBundles"] == 3
    assert set(before) < set(after["boundaries"])
    new_point = (set(after["boundaries"]) - set(before)).pop()
    assert int(largest[0], 16) < int(new_point, 16) < int(largest[1], 16)
    assert admin(standalone.web_url, "namespaces", "split-bundle", namespace).returncode != 0


def _owned(http: Http, standalone: broker_testing.StandaloneProcess) -> set[str]:
    broker = f"127.0.0.1:{standalone.web_port}"
    return set(http.get(f"/admin/v2/brokers/standalone/{broker}/ownedNamespaces").json())


def test_deleting_a_bundle_is_refused_while_topics_fall_into_it_unless_forced(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str,
        client: pulsar.Client) -> None:
    topic = f"persistent://{namespace}/kept"
    client.create_producer(topic).close()  # the bundle is now owned and has a topic
    assert f"{namespace}/{FULL_BUNDLE}" in _owned(http, standalone)
    path = f"/admin/v2/namespaces/{namespace}/{FULL_BUNDLE}"
    refused = http.delete(path)
    assert (refused.status, refused.reason) == (409, "Cannot delete non empty bundle")
    assert http.delete(f"{path}?force=true").status == 204
    # The bundle was given up, not its topics: a lookup assigns it again.
    assert f"{namespace}/{FULL_BUNDLE}" not in _owned(http, standalone)
    assert f"persistent://{namespace}/kept" in http.get(
        f"/admin/v2/namespaces/{namespace}/topics").json()
    client.create_producer(topic).close()


def test_namespace_topics_leave_system_topics_out_unless_asked(
        standalone: broker_testing.StandaloneProcess, http: Http, namespace: str) -> None:
    assert http.put(f"/admin/v2/persistent/{namespace}/__change_events").status == 204
    assert http.put(f"/admin/v2/persistent/{namespace}/orders").status == 204
    system = f"persistent://{namespace}/__change_events"
    base = f"/admin/v2/namespaces/{namespace}/topics"
    assert http.get(base).json() == [f"persistent://{namespace}/orders"]
    assert system in http.get(f"{base}?includeSystemTopic=true").json()
    listed = ok(standalone.web_url, "namespaces", "topics", namespace, "-ist").split()
    assert system in listed


@pytest.mark.parametrize(("path", "method", "reason"), [
    ("maxProducersPerTopic", "POST", "maxProducersPerTopic must be 0 or more"),
    ("maxConsumersPerSubscription", "POST", "maxConsumersPerSubscription must be 0 or more"),
    ("maxUnackedMessagesPerConsumer", "POST", "maxUnackedMessagesPerConsumer must be 0 or more"),
    ("maxSubscriptionsPerTopic", "POST", "maxSubscriptionsPerTopic must be 0 or more"),
    ("maxTopicsPerNamespace", "POST", "maxTopicsPerNamespace must be 0 or more"),
    ("compactionThreshold", "PUT", "compactionThreshold must be 0 or more"),
    ("subscriptionExpirationTime", "POST", "Invalid value for subscription expiration time"),
    ("deduplicationSnapshotInterval", "POST", "interval must be greater than or equal to 0"),
])
def test_negative_limits_are_refused_with_apaches_messages(
        http: Http, namespace: str, path: str, method: str, reason: str) -> None:
    reply = http.call(method, f"/admin/v2/namespaces/{namespace}/{path}", -1)
    assert (reply.status, reply.reason) == (412, reason)
    assert http.get(f"/admin/v2/namespaces/{namespace}/{path}").status == 204
