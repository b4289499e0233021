"""`pulsar-admin` end to end: the command run as a process against the real standalone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pulsar
from pulsar_broker import testing as broker_testing


def test_tenant_and_namespace_commands(admin, unique: str) -> None:
    tenant = f"cli-{unique}"
    admin.ok("tenants", "create", tenant, "-r", "alice")
    assert tenant in admin.ok("tenants", "list").splitlines()
    info = json.loads(admin.ok("tenants", "get", tenant))
    assert info == {"adminRoles": ["alice"], "allowedClusters": ["standalone"]}
    admin.ok("namespaces", "create", f"{tenant}/ns", "--bundles", "2")
    assert admin.ok("namespaces", "list", tenant).splitlines() == [f"{tenant}/ns"]
    admin.ok("namespaces", "set-retention", f"{tenant}/ns", "--time", "3h", "--size", "1G")
    retention = json.loads(admin.ok("namespaces", "get-retention", f"{tenant}/ns"))
    assert retention == {"retentionTimeInMinutes": 180, "retentionSizeInMB": 1024}
    policies = json.loads(admin.ok("namespaces", "policies", f"{tenant}/ns"))
    assert policies["bundles"]["numBundles"] == 2


def test_errors_print_the_reason_and_exit_1(admin, unique: str) -> None:
    result = admin("tenants", "get", f"missing-{unique}")
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == "Tenant does not exist"
    assert "Reason: Tenant does not exist" in result.stderr


def test_unreachable_broker_is_reported_with_its_url(admin_at) -> None:
    admin = admin_at("http://127.0.0.1:1")
    result = admin("tenants", "list")
    assert result.returncode == 1
    assert "Error connecting to: http://127.0.0.1:1" in result.stderr


def test_admin_url_option_overrides_the_environment(
        standalone: broker_testing.StandaloneProcess, admin_at) -> None:
    result = admin_at("http://127.0.0.1:1")("--admin-url", standalone.web_url, "brokers", "healthcheck")
    assert (result.returncode, result.stdout.strip()) == (0, "ok")


def test_topic_commands_with_stats_and_peek(admin, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/cli-{unique}"
    admin.ok("topics", "create-partitioned-topic", f"{topic}-p", "-p", "2")
    assert json.loads(admin.ok("topics", "get-partitioned-topic-metadata", f"{topic}-p")) == {
        "partitions": 2}
    admin.ok("topics", "create", topic)
    admin.ok("topics", "create-subscription", topic, "-s", "sub", "-m", "earliest")
    producer = client.create_producer(topic, batching_max_publish_delay_ms=50)
    for i in range(3):
        producer.send_async(f"payload-{i}".encode(), None)
    producer.flush()
    producer.close()
    stats = json.loads(admin.ok("topics", "stats", topic))
    assert stats["msgInCounter"] == 3
    peeked = admin.ok("topics", "peek-messages", topic, "-s", "sub", "-n", "3")
    assert peeked.count("Message ID: ") == 3
    assert "|payload-2" in peeked
    last = json.loads(admin.ok("topics", "last-message-id", topic))
    by_id = admin.ok("topics", "get-message-by-id", topic, "-l", str(last["ledgerId"]),
                     "-e", str(last["entryId"]))
    assert "|payload-2" in by_id
    admin.ok("topics", "skip", topic, "-s", "sub", "-n", "1")
    admin.ok("topics", "clear-backlog", topic, "-s", "sub")
    stats = json.loads(admin.ok("topics", "stats", topic))
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 0
    assert admin.ok("topics", "subscriptions", topic).splitlines() == ["sub"]
    admin.ok("topics", "unsubscribe", topic, "-s", "sub")
    admin.ok("topics", "delete", topic)
    assert admin("topics", "stats", topic).returncode == 1


def test_a_reader_that_stops_reading_gets_no_traceback(admin) -> None:
    # `pulsar-admin topics list ... | head -1`: the pipe's reader is gone before the output.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pulsar_client_tools.admin.main", "namespaces", "policies",
             "public/default"], stdout=write_end, stderr=subprocess.PIPE, text=True,
            env=admin.env, timeout=60)
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0
