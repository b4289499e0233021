"""`pulsar-admin topics get-backlog-size|analyze-backlog`, `clusters
get-peer-clusters|update-peer-clusters` and `broker-stats topics`, run as processes against
the session's standalone."""

from __future__ import annotations

import json

import pulsar


def test_backlog_size_and_backlog_analysis(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-backlog-{unique}"
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"y" * 50) for _ in range(2)]
    producer.close()
    total = int(admin.ok("topics", "get-backlog-size", topic))
    assert total > 0
    first = f"{ids[0].ledger_id()}:{ids[0].entry_id()}"
    assert int(admin.ok("topics", "get-backlog-size", topic, "-m", first)) == total // 2
    analyzed = json.loads(admin.ok("topics", "analyze-backlog", topic, "-s", "sub"))
    assert (analyzed["entries"], analyzed["messages"], analyzed["aborted"]) == (2, 2, False)
    assert analyzed["firstMessageId"] == first
    second = f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    from_second = json.loads(admin.ok("topics", "analyze-backlog", topic, "-s", "sub",
                                      "-p", second))
    assert (from_second["entries"], from_second["firstMessageId"]) == (1, second)


def test_peer_clusters_commands(admin, unique: str) -> None:
    for name in (f"pa-{unique}", f"pb-{unique}"):
        admin.ok("clusters", "create", name, "--url", "http://localhost:8080")
    admin.ok("clusters", "update-peer-clusters", f"pa-{unique}", "--peer-clusters", f"pb-{unique}")
    assert json.loads(admin.ok("clusters", "get-peer-clusters", f"pa-{unique}")) == [
        f"pb-{unique}"]
    refused = admin("clusters", "update-peer-clusters", f"pa-{unique}",
                    "--peer-clusters", f"nope-{unique}")
    assert refused.returncode != 0
    assert f"Peer cluster nope-{unique} does not exist" in refused.stderr
    admin.ok("clusters", "update-peer-clusters", f"pa-{unique}", "--peer-clusters", "")
    for name in (f"pa-{unique}", f"pb-{unique}"):
        admin.ok("clusters", "delete", name)


def test_broker_stats_topics_prints_compact_or_indented_json(
        admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-dump-{unique}"
    producer = client.create_producer(topic)
    compact = admin.ok("broker-stats", "topics")
    indented = admin.ok("broker-stats", "topics", "-i")
    producer.close()
    assert len(compact.strip().splitlines()) == 1
    assert len(indented.splitlines()) > 1
    for text in (compact, indented):
        bundles = json.loads(text)["public/default"]
        assert any(topic in d.get("persistent", {}) for d in bundles.values())


def test_brokers_backlog_quota_check(admin) -> None:
    assert admin.ok("brokers", "backlog-quota-check") == "ok\n"


def test_topic_lists_with_system_topics_and_by_bundle(admin, unique: str) -> None:
    ns = f"public/cli-list-{unique}"
    admin.ok("namespaces", "create", ns)
    admin.ok("topics", "create", f"persistent://{ns}/__change_events")
    admin.ok("topics", "create", f"persistent://{ns}/plain")
    admin.ok("topics", "create-partitioned-topic", f"persistent://{ns}/parted", "-p", "1")
    assert admin.ok("topics", "list", ns).split() == [
        f"persistent://{ns}/parted-partition-0", f"persistent://{ns}/plain"]
    assert f"persistent://{ns}/__change_events" in admin.ok("topics", "list", ns, "-ist")
    assert admin.ok("topics", "list", ns, "-b", "0x00000000_0x00000001") == ""
    assert admin.ok("topics", "list-partitioned-topics", ns, "-ist").split() == [
        f"persistent://{ns}/parted"]


def test_broker_stats_monitoring_metrics(admin, client: pulsar.Client, unique: str) -> None:
    producer = client.create_producer(f"persistent://public/default/cli-metrics-{unique}")
    dumped = json.loads(admin.ok("broker-stats", "monitoring-metrics", "-i"))
    producer.close()
    namespaces = {m["dimensions"]["namespace"]: m["metrics"] for m in dumped}
    assert namespaces["public/default"]["brk_no_of_producers"] >= 1


def test_brokers_healthcheck_with_a_topic_version(admin) -> None:
    assert admin.ok("brokers", "healthcheck", "-tv", "V1") == "ok\n"


def test_expire_messages_all_subscriptions(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-expire-all-{unique}"
    client.subscribe(topic, "sub").close()
    client.create_producer(topic).send(b"old")
    admin.ok("topics", "expire-messages-all-subscriptions", topic, "-t", "0")
    assert json.loads(admin.ok("topics", "stats", topic))["subscriptions"]["sub"][
        "msgBacklog"] == 0


def test_stats_internal_with_ledger_metadata(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-internal-{unique}"
    client.create_producer(topic).send(b"x")
    plain = json.loads(admin.ok("topics", "stats-internal", topic))
    assert "metadata" not in plain["ledgers"][-1]
    with_metadata = json.loads(admin.ok("topics", "stats-internal", topic, "-m"))
    assert isinstance(json.loads(with_metadata["ledgers"][-1]["metadata"]), dict)


def test_cluster_data_flags_are_stored(admin, unique: str) -> None:
    name = f"flags-{unique}"
    admin.ok("clusters", "create", name, "--url", "http://h:8080", "--proxy-url",
             "pulsar://p:6650", "--proxy-protocol", "SNI", "--auth-plugin", "a.B",
             "--auth-parameters", "k:v", "--tls-enable", "--tls-allow-insecure",
             "--tls-trust-certs-filepath", "/ca.pem")
    data = json.loads(admin.ok("clusters", "get", name))
    admin.ok("clusters", "delete", name)
    assert {key: data[key] for key in (
        "serviceUrl", "proxyServiceUrl", "proxyProtocol", "authenticationPlugin",
        "authenticationParameters", "brokerClientTlsEnabled", "tlsAllowInsecureConnection",
        "brokerClientTrustCertsFilePath")} == {
        "serviceUrl": "http://h:8080", "proxyServiceUrl": "pulsar://p:6650",
        "proxyProtocol": "SNI", "authenticationPlugin": "a.B", "authenticationParameters": "k:v",
        "brokerClientTlsEnabled": True, "tlsAllowInsecureConnection": True,
        "brokerClientTrustCertsFilePath": "/ca.pem"}


def test_partitioned_lookup_names_each_partitions_broker(admin, unique: str) -> None:
    topic = f"persistent://public/default/cli-plookup-{unique}"
    admin.ok("topics", "create-partitioned-topic", topic, "-p", "2")
    brokers = json.loads(admin.ok("topics", "partitioned-lookup", topic))
    assert sorted(brokers) == [f"{topic}-partition-0", f"{topic}-partition-1"]
    assert set(brokers.values()) == {admin.ok("topics", "lookup", topic + "-partition-0").strip()}
    grouped = json.loads(admin.ok("topics", "partitioned-lookup", topic, "-s"))
    assert list(grouped.values()) == [[f"{topic}-partition-0", f"{topic}-partition-1"]]


def test_expire_messages_up_to_a_position(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-expire-to-{unique}"
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=False)
    first = producer.send(b"one")
    producer.send(b"two")
    admin.ok("topics", "expire-messages", topic, "-s", "sub", "-p",
             f"{first.ledger_id()}:{first.entry_id()}")
    assert json.loads(admin.ok("topics", "stats", topic))["subscriptions"]["sub"][
        "msgBacklog"] == 1
    both = admin("topics", "expire-messages", topic, "-s", "sub", "-t", "1h", "-p", "1:1")
    assert both.returncode != 0
    assert "Can't expire message by time and by message position at the same time." in both.stderr
    assert admin("topics", "expire-messages", topic, "-s", "sub").returncode != 0
