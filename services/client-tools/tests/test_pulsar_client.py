"""`pulsar-client produce` and `consume` end to end against a real `pulsar standalone`."""

from __future__ import annotations

import subprocess

BOUNDARY = "----- got message -----"


def _messages(stdout: str) -> list[str]:
    """The line printed after each boundary."""
    lines = stdout.splitlines()
    return [lines[i + 1] for i, line in enumerate(lines) if line == BOUNDARY]


def test_produced_messages_are_consumed_with_key_properties_and_content(pulsar_client, topic):
    produced = pulsar_client("produce", topic, "-m", "hello", "-m", "world", "-n", "2",
                             "-k", "key-1", "-p", "colour=blue", "-p", "size=10")
    assert produced.returncode == 0, produced.stderr
    assert "4 messages successfully produced" in produced.stdout

    consumed = pulsar_client("consume", topic, "-s", "sub", "-p", "Earliest", "-n", "4")
    assert consumed.returncode == 0, consumed.stderr
    assert _messages(consumed.stdout) == [
        f"key:[key-1], properties:[colour=blue, size=10], content:{word}"
        for word in ("hello", "world", "hello", "world")
    ]
    assert "4 messages successfully consumed" in consumed.stdout


def test_messages_without_key_or_properties_print_null_key_and_empty_properties(
    pulsar_client, topic
):
    assert pulsar_client("produce", topic, "-m", "a,b").returncode == 0
    consumed = pulsar_client(
        "consume", topic, "-s", "sub", "-t", "Shared", "-p", "Earliest", "-n", "2"
    )
    assert consumed.returncode == 0, consumed.stderr
    assert _messages(consumed.stdout) == [
        "key:[null], properties:[], content:a",
        "key:[null], properties:[], content:b",
    ]


def test_files_are_sent_whole_after_messages_and_acked_messages_are_not_consumed_again(
    pulsar_client, topic, tmp_path
):
    body = tmp_path / "body.txt"
    body.write_text("line one, with a comma")
    assert pulsar_client("produce", topic, "-m", "first", "-f", str(body)).returncode == 0
    first = pulsar_client("consume", topic, "-s", "sub", "-p", "Earliest", "-n", "1")
    assert _messages(first.stdout) == ["key:[null], properties:[], content:first"]
    second = pulsar_client("consume", topic, "-s", "sub", "-n", "1")
    assert _messages(second.stdout) == ["key:[null], properties:[], content:line one, with a comma"]


def test_produce_without_messages_is_a_usage_error(run_module):
    done = run_module("pulsar_client_tools.client.main", "produce",
                      "persistent://public/default/nothing", timeout_s=60)
    assert done.returncode == 1
    assert "nothing to send" in done.stderr


def test_consume_requires_a_subscription_name(run_module):
    done = run_module("pulsar_client_tools.client.main", "consume",
                      "persistent://public/default/nothing", timeout_s=60)
    assert done.returncode == 2
    assert "--subscription-name" in done.stderr


def test_consuming_forever_stops_on_ctrl_c_and_reports_the_count(
        standalone, pulsar_client, topic, background):
    consumer = background.start("pulsar_client_tools.client.main", "--url", standalone.service_url,
                                "consume", topic, "-s", "sub", "-p", "Earliest", "-n", "0")
    assert pulsar_client("produce", topic, "-m", "one,two").returncode == 0
    assert consumer.stdout is not None
    seen = [consumer.stdout.readline().rstrip("\n") for _ in range(4)]
    assert seen == [
        BOUNDARY,
        "key:[null], properties:[], content:one",
        BOUNDARY,
        "key:[null], properties:[], content:two",
    ]
    out = background.ctrl_c(consumer)
    assert consumer.returncode == 0
    assert "2 messages successfully consumed" in out


def test_http_service_url_works_for_produce_and_consume(standalone, topic, run_module):
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_module("pulsar_client_tools.client.main", "--url", standalone.web_url, *args)

    assert cli("produce", topic, "-m", "over-http", "-k", "k").returncode == 0
    consumed = cli("consume", topic, "-s", "sub", "-p", "Earliest", "-n", "1")
    assert consumed.returncode == 0, consumed.stderr
    assert _messages(consumed.stdout) == ["key:[k], properties:[], content:over-http"]



def test_read_from_earliest_and_from_a_message_id_without_a_subscription(
        pulsar_client, topic, client):
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(4)]
    producer.close()
    read = pulsar_client("read", topic, "-m", "earliest", "-n", "4")
    assert read.returncode == 0, read.stderr
    assert [line.rsplit(":", 1)[1] for line in _messages(read.stdout)] == [
        "m0", "m1", "m2", "m3"]
    assert "4 messages successfully read" in read.stdout
    start = f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    after = pulsar_client("read", topic, "-m", start, "-n", "2")
    assert [line.rsplit(":", 1)[1] for line in _messages(after.stdout)] == ["m2", "m3"]
    inclusive = pulsar_client("read", topic, "-m", start, "-i", "-n", "1", "--hide-content")
    assert BOUNDARY not in inclusive.stdout
    assert "1 messages successfully read" in inclusive.stdout
    bad = pulsar_client("read", topic, "-m", "yesterday")
    assert bad.returncode == 1 and "invalid --start-message-id" in bad.stderr


def test_consume_with_regex_takes_messages_of_every_matching_topic(pulsar_client, topic, client):
    for suffix in ("a", "b"):
        producer = client.create_producer(f"{topic}-{suffix}")
        producer.send(suffix.encode())
        producer.close()
    pattern = f"{topic}-.*"
    consumed = pulsar_client("consume", pattern, "--regex", "-s", "sub", "-n", "2",
                             "-p", "Earliest")
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(line.rsplit(":", 1)[1] for line in _messages(consumed.stdout)) == ["a", "b"]


def test_consume_into_a_pipe_whose_reader_left_ends_without_a_traceback(
        pulsar_client, standalone, topic):
    # `pulsar-client consume ... | head -1` once head has exited.
    import os
    import sys

    assert pulsar_client("produce", topic, "-m", "one", "-n", "3").returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pulsar_client_tools.client.main", "--url",
             standalone.service_url, "consume", topic, "-s", "piped", "-p", "Earliest", "-n", "3"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr
    assert result.returncode == 0
