"""`pulsar-perf produce` and `consume` end to end: rate lines, summaries and percentiles."""

from __future__ import annotations

import re

import pulsar

SUMMARY = re.compile(
    r"Aggregated throughput stats --- ([\d,]+) records (sent|received) --- "
    r"[\d.]+ msg/s --- [\d.]+ Mbit/s"
)
LATENCY = re.compile(
    r"Aggregated latency stats --- Latency: mean: [\d.]+ ms - med: [\d.]+ - "
    r"95pct: [\d.]+ - 99pct: [\d.]+ - 99.9pct: [\d.]+ - 99.99pct: [\d.]+ - "
    r"Max: [\d.]+"
)


def _records(stdout: str) -> int:
    match = SUMMARY.search(stdout)
    assert match, stdout
    return int(match.group(1).replace(",", ""))


def test_produce_then_consume_report_rates_and_the_same_record_count(pulsar_perf, topic):
    produced = pulsar_perf("produce", topic, "-time", "2", "-i", "0.5", "-s", "100", "-r", "2000")
    assert produced.returncode == 0, produced.stderr
    assert re.search(
        r"Throughput produced: [\d,]+ msg --- [\d.]+ msg/s --- [\d.]+ Mbit/s --- "
        r"failure [\d.]+ msg/s --- Latency: mean: ",
        produced.stdout,
    ), produced.stdout
    assert LATENCY.search(produced.stdout), produced.stdout
    sent = _records(produced.stdout)
    assert sent > 0

    consumed = pulsar_perf(
        "consume", topic, "-sp", "Earliest", "-m", str(sent), "-time", "60", "-i", "0.5"
    )
    assert consumed.returncode == 0, consumed.stderr
    assert _records(consumed.stdout) == sent
    assert LATENCY.search(consumed.stdout), consumed.stdout


def test_unbatched_producers_over_several_topics_stop_at_the_message_count(pulsar_perf, topic):
    produced = pulsar_perf("produce", topic, "-db", "-t", "2", "-n", "2", "-m", "200", "-i", "0.5")
    assert produced.returncode == 0, produced.stderr
    assert "Created 4 producers" in produced.stdout
    assert _records(produced.stdout) == 200
    assert LATENCY.search(produced.stdout), produced.stdout

    consumed = pulsar_perf("consume", topic, "-t", "2", "-st", "Shared", "-n", "2", "-sp", "Earliest",
                           "-m", "200", "-time", "60", "-i", "0.5")
    assert consumed.returncode == 0, consumed.stderr
    assert "Created 4 consumers" in consumed.stdout
    assert _records(consumed.stdout) == 200


def test_ctrl_c_ends_a_run_without_limits_with_the_summary(standalone, topic, background):
    perf = background.start("pulsar_client_tools.perf.main", "produce", "-u", standalone.service_url,
                            topic, "-r", "500", "-i", "0.3")
    assert perf.stdout is not None
    lines = iter(perf.stdout.readline, "")
    assert any(line.startswith("Throughput produced:") for line in lines)
    out = background.ctrl_c(perf)
    assert perf.returncode == 0
    assert _records(out) > 0
    assert LATENCY.search(out), out


def test_read_keys_histogram_file_and_partitions_with_apaches_flags(
        pulsar_perf, topic, standalone, client, tmp_path):
    histogram_file = tmp_path / "latency.hgrm"
    produced = pulsar_perf("produce", topic, "-m", "50", "-mk", "autoIncrement", "-db",
                           "--warmup-time", "0", "--histogram-file", str(histogram_file))
    assert produced.returncode == 0, produced.stderr
    assert _records(produced.stdout) == 50
    table = histogram_file.read_text()
    assert "Percentile" in table and "#[Total count    =           50]" in table
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    keys = [reader.read_next(10_000).partition_key() for _ in range(3)]
    assert keys == ["0", "1", "2"]
    reader.close()

    read = pulsar_perf("read", topic, "-n", "50", "-m", "earliest", "-i", "0.5", "-time", "60")
    assert read.returncode == 0, read.stderr
    assert _records(read.stdout) == 50
    assert "Throughput read:" in read.stdout or "Aggregated throughput stats" in read.stdout

    partitioned = f"{topic}-partitioned"
    made = pulsar_perf("produce", partitioned, "-au", standalone.web_url, "--partitions", "3",
                       "-m", "30", "-db")
    assert made.returncode == 0, made.stderr
    assert client.get_topic_partitions(partitioned) == [
        f"{partitioned}-partition-{i}" for i in range(3)]

    unkeyed = pulsar_perf("produce", topic, "-k", "my-key", "-m", "1")
    assert unkeyed.returncode == 1
    assert "--encryption-key-name needs --encryption-key-value-file" in unkeyed.stderr
