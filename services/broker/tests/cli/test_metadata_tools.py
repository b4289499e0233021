"""`pulsar initialize-namespace`, `pulsar delete-cluster-metadata` and `pulsar compact-topic` as
an operator runs them."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import urllib.request

import pulsar
from pulsar_broker import testing as broker_testing


def pulsar_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pulsar_common.cli.main", *args],
                          capture_output=True, text=True, timeout=300, check=False)


def get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def test_initialize_namespace_then_compact_topic_against_a_running_broker(
        tmp_path: pathlib.Path, etcd_url: str) -> None:
    created = pulsar_command("initialize-namespace", "-cs", etcd_url, "-c", "standalone",
                             "tools/ns", "tools/other")
    assert created.returncode == 0, created.stderr
    assert "namespace tools/ns initialized for cluster standalone" in created.stdout

    node = broker_testing.StandaloneProcess(
        tmp_path / "data", {"journalSyncData": "false", "metadataStoreUrl": etcd_url})
    node.extra_arguments = ["-nfw"]
    node.start()
    try:
        assert sorted(get_json(f"{node.web_url}/admin/v2/namespaces/tools")) == [  # type: ignore[arg-type]
            "tools/ns", "tools/other"]
        topic = "persistent://tools/ns/table"
        client = pulsar.Client(node.service_url)
        producer = client.create_producer(topic, batching_enabled=False)
        for key, value in [("a", b"1"), ("b", b"1"), ("a", b"2")]:
            producer.send(value, partition_key=key)
        conf = tmp_path / "broker.conf"
        conf.write_text(f"metadataStoreUrl={etcd_url}\nclusterName=standalone\n")
        compacted = pulsar_command("compact-topic", "-c", str(conf), "-t", topic)
        assert compacted.returncode == 0, compacted.stdout + compacted.stderr
        assert f"compaction of {topic}: SUCCESS" in compacted.stdout
        reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        seen = []
        while reader.has_message_available():
            message = reader.read_next(10_000)
            seen.append((message.partition_key(), message.data()))
        assert sorted(seen) == [("a", b"2"), ("b", b"1")]  # the older value of "a" is gone
        client.close()
    finally:
        node.stop()


def test_compact_topic_reports_a_config_without_metadata_store(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=standalone\n")
    result = pulsar_command("compact-topic", "-c", str(conf), "-t", "persistent://a/b/c")
    assert result.returncode == 2
    assert "metadataStoreUrl is not set" in result.stderr


def test_delete_cluster_metadata_refuses_a_running_cluster_then_tears_a_stopped_one_down(
        tmp_path: pathlib.Path, etcd_url: str) -> None:
    node = broker_testing.StandaloneProcess(
        tmp_path / "data", {"journalSyncData": "false", "metadataStoreUrl": etcd_url})
    node.extra_arguments = ["-nfw"]
    node.start()
    try:
        client = pulsar.Client(node.service_url)
        client.create_producer("persistent://public/default/to-forget").send(b"old")
        client.close()
        refused = pulsar_command("delete-cluster-metadata", "-md", etcd_url, "-c", "standalone")
        assert refused.returncode != 0
        assert "brokers are still registered" in refused.stderr
    finally:
        node.stop()
    deleted = pulsar_command("delete-cluster-metadata", "-zk", etcd_url, "-c", "standalone",
                             "-cs", etcd_url, "--bookkeeper-metadata-service-uri", etcd_url)
    assert deleted.returncode == 0, deleted.stderr
    assert "deleted /managed-ledgers" in deleted.stdout
    assert "deleted /admin/clusters/standalone" in deleted.stdout
    assert "metadata of cluster standalone deleted" in deleted.stdout
    # A broker started on the emptied store starts a new cluster: the old topic is gone.
    node = broker_testing.StandaloneProcess(
        tmp_path / "data2", {"journalSyncData": "false", "metadataStoreUrl": etcd_url})
    node.extra_arguments = ["-nfw"]
    node.start()
    try:
        topics = get_json(f"{node.web_url}/admin/v2/persistent/public/default")
        assert "persistent://public/default/to-forget" not in topics  # type: ignore[operator]
    finally:
        node.stop()
