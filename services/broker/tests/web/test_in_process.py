"""The web app of an in-process standalone: the add-entry latency hook, app shutdown, and the
metrics computed over a sampling interval (rates, the managed-ledger and cache series)."""

from __future__ import annotations

import asyncio
import pathlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pulsar
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families
from pulsar_broker import standalone as standalone_module
from pulsar_broker.web import app as web_app
from pulsar_broker.web import metrics as web_metrics
from pulsar_broker.web import rates, stats
from pulsar_common import naming, testing


def in_process_standalone(tmp_path: pathlib.Path, **settings: str) -> standalone_module.Standalone:
    overrides = {"brokerServicePort": str(testing.free_port()),
                 "webServicePort": str(testing.free_port()),
                 "bookiePort": str(testing.free_port()),
                 "advertisedAddress": "127.0.0.1", "bindAddress": "127.0.0.1",
                 "journalSyncData": "false", **settings}
    data_dir = tmp_path / "data"
    return standalone_module.Standalone(
        data_dir, standalone_module.load_settings(data_dir, None, overrides),
        functions_worker=False)


@pytest.fixture
async def running(tmp_path: pathlib.Path) -> AsyncIterator[standalone_module.Standalone]:
    instance = in_process_standalone(tmp_path)
    await instance.start()
    try:
        yield instance
    finally:
        await instance.stop()


async def test_without_topic_level_metrics_the_series_are_summed_per_namespace(
        tmp_path: pathlib.Path) -> None:
    instance = in_process_standalone(tmp_path, exposeTopicLevelMetricsInPrometheus="false")
    await instance.start()
    assert instance.service is not None
    client = pulsar.Client(instance.service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        for name in ("a", "b"):
            producer = await asyncio.to_thread(
                client.create_producer, f"persistent://public/default/{name}",
                batching_enabled=False)
            for _ in range(3):
                await asyncio.to_thread(producer.send, b"m")
        url = f"{instance.service.web_service_url}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            text = await response.text()
    finally:
        await asyncio.to_thread(client.close)
        await instance.stop()
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    assert not [s for s in samples if "topic" in s.labels or "subscription" in s.labels]
    public = {s.name: s.value for s in samples if s.labels.get("namespace") == "public/default"}
    assert public["pulsar_in_messages_total"] == 6
    assert public["pulsar_producers_count"] == 2
    assert public["pulsar_topics_count"] == 2
    assert public["pulsar_storage_write_latency_count"] == 6


async def test_add_entry_hook_feeds_apaches_latency_and_size_buckets(
        running: standalone_module.Standalone) -> None:
    assert running.service is not None
    topic = "persistent://public/default/latency"
    client = pulsar.Client(running.service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:  # The statistics of a topic are kept while it is loaded.
        producer = await asyncio.to_thread(client.create_producer, topic)
        recorders = running.service.telemetry
        recorders.record_add_entry(topic, 0.003, 100)
        recorders.record_add_entry(topic, 0.3, 3000)
        recorders.record_add_entry(topic, 2.0, 2_000_000)
        url = f"{running.service.web_service_url}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            text = await response.text()
        await asyncio.to_thread(producer.close)
    finally:
        await asyncio.to_thread(client.close)
    samples = {s.name: s.value for family in text_string_to_metric_families(text)
               for s in family.samples if s.labels.get("topic") == topic}
    assert samples["pulsar_storage_write_latency_le_5"] == 1  # 3 ms: in (1 ms, 5 ms]
    assert samples["pulsar_storage_write_latency_le_1000"] == 1  # 300 ms
    assert samples["pulsar_storage_write_latency_le_overflow"] == 1  # 2 s
    assert samples["pulsar_storage_write_latency_le_0_5"] == 0
    assert samples["pulsar_storage_write_latency_count"] == 3
    assert samples["pulsar_storage_write_latency_sum"] == pytest.approx(2303.0)
    assert samples["pulsar_entry_size_le_128"] == 1
    assert samples["pulsar_entry_size_le_4_kb"] == 1
    assert samples["pulsar_entry_size_le_overflow"] == 1
    assert samples["pulsar_entry_size_sum"] == 2_003_100


async def test_a_cleaned_up_app_no_longer_receives_latency_samples(
        running: standalone_module.Standalone) -> None:
    assert running.service is not None
    live_before = len(running.service.telemetry)
    runner = web.AppRunner(web_app.create_app(running.service))
    await runner.setup()
    assert len(running.service.telemetry) == live_before + 1
    await runner.cleanup()
    assert len(running.service.telemetry) == live_before


async def test_rates_are_counter_deltas_over_the_sampling_interval(
        running: standalone_module.Standalone) -> None:
    service = running.service
    assert service is not None
    topic = "persistent://public/default/rates"
    tracker = rates.RateTracker(service)
    client = pulsar.Client(service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        producer = await asyncio.to_thread(client.create_producer, topic, batching_enabled=False)
        await asyncio.to_thread(producer.send, b"x" * 100)
        tracker.tick(100.0)
        for _ in range(10):
            await asyncio.to_thread(producer.send, b"x" * 100)
        tracker.tick(102.0)
        assert tracker.topic_rates(topic).msg_rate_in == 5.0
        loaded = await service.get_topic(naming.TopicName.parse(topic), create=False)
        assert loaded is not None
        reported = stats.topic_stats(loaded, tracker)
        assert reported["msgRateIn"] == 5.0
        assert reported["msgThroughputIn"] > 5.0 * 100
        assert [p["msgRateIn"] for p in reported["publishers"]] == [5.0]
        tracker.tick(104.0)
        assert tracker.topic_rates(topic).msg_rate_in == 0.0
    finally:
        await asyncio.to_thread(client.close)


async def test_a_rate_after_idle_intervals_is_over_the_last_interval_only(
        running: standalone_module.Standalone) -> None:
    service = running.service
    assert service is not None
    topic = "persistent://public/default/rates-after-idle"
    tracker = rates.RateTracker(service)
    client = pulsar.Client(service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        producer = await asyncio.to_thread(client.create_producer, topic, batching_enabled=False)
        tracker.tick(100.0)
        tracker.tick(102.0)  # idle
        assert tracker.topic_rates(topic).msg_rate_in == 0.0
        for _ in range(10):
            await asyncio.to_thread(producer.send, b"x" * 100)
        tracker.tick(104.0)
        assert tracker.topic_rates(topic).msg_rate_in == 5.0  # 10 in 2 s, not in 4 s
        await asyncio.to_thread(producer.close)
        tracker.tick(106.0)
        assert tracker.topic_rates(topic).msg_rate_in == 0.0
        assert not [key for key in tracker._samples if " producer " in key]  # dropped with it
    finally:
        await asyncio.to_thread(client.close)


async def test_storage_rates_count_entries_and_managed_ledger_series_sum_a_namespace(
        running: standalone_module.Standalone) -> None:
    service = running.service
    assert service is not None
    topic = "persistent://public/default/storage-rates"
    tracker = rates.RateTracker(service)
    client = pulsar.Client(service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        consumer = await asyncio.to_thread(client.subscribe, topic, "sub")
        producer = await asyncio.to_thread(
            client.create_producer, topic, batching_enabled=True, batching_max_messages=5,
            batching_max_publish_delay_ms=60_000)
        tracker.tick(100.0)
        for i in range(10):  # two entries of five messages each
            producer.send_async(b"x" * 100, None)
        await asyncio.to_thread(producer.flush)
        for _ in range(10):
            await asyncio.to_thread(consumer.receive, 10_000)
        tracker.tick(102.0)
        topic_rates = tracker.topic_rates(topic)
        assert (topic_rates.msg_rate_in, topic_rates.entry_rate_in) == (5.0, 1.0)
        assert topic_rates.entry_rate_read == 1.0
        assert topic_rates.throughput_read == topic_rates.msg_throughput_in > 500
        metrics = web_metrics.BrokerMetrics(service, tracker)
        try:
            text = metrics.render().decode()
        finally:
            metrics.shutdown()
        loaded = await service.get_topic(naming.TopicName.parse(topic), create=False)
        assert loaded is not None
    finally:
        await asyncio.to_thread(client.close)
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    of_topic = {s.name: s.value for s in samples if s.labels.get("topic") == topic}
    assert of_topic["pulsar_storage_write_rate"] == 1.0
    assert of_topic["pulsar_storage_read_rate"] == 1.0
    ledgers = {s.name: s for s in samples if s.name.startswith("pulsar_ml_")
               and s.labels.get("namespace") == "public/default/persistent"}
    assert set(ledgers["pulsar_ml_AddEntryMessagesRate"].labels) == {"cluster", "namespace"}
    assert ledgers["pulsar_ml_AddEntryMessagesRate"].value == 1.0
    assert ledgers["pulsar_ml_AddEntryBytesRate"].value == topic_rates.msg_throughput_in
    assert ledgers["pulsar_ml_ReadEntriesRate"].value == 1.0
    assert ledgers["pulsar_ml_ReadEntriesBytesRate"].value == topic_rates.throughput_read
    assert ledgers["pulsar_ml_NumberOfMessagesInBacklog"].value == 2  # none acknowledged
    write_quorum = service.ledger_factory.default_config.write_quorum
    assert ledgers["pulsar_ml_StoredMessagesSize"].value == (
        loaded.ledger.total_size * write_quorum) > 0


async def test_health_check_fails_with_a_reason_when_storage_is_gone(
        running: standalone_module.Standalone) -> None:
    service = running.service
    assert service is not None
    url = f"{service.web_service_url}/admin/v2/brokers/health"
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as healthy:
            assert (healthy.status, await healthy.text()) == (200, "ok")
        await service.ledger_factory.shutdown()
        async with session.get(url) as broken:
            assert broken.status == 500
            assert (await broken.json())["reason"]


NAMESPACE_LEDGERS = "public/default/persistent"


def ledger_series(metrics: web_metrics.BrokerMetrics) -> dict[str, float]:
    """The pulsar_ml_* samples of public/default and the broker-wide ones, by name (bucket
    samples by name and quantile: `name{quantile}`)."""
    text = metrics.render().decode()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if labels.get("namespace", NAMESPACE_LEDGERS) != NAMESPACE_LEDGERS:
                continue
            if not sample.name.startswith(("pulsar_ml_", "pulsar_broker_")):
                continue
            key = sample.name + (f"{{{labels['quantile']}}}" if "quantile" in labels else "")
            found[key] = sample.value
    return found


def bucket_sum(series: dict[str, float], name: str) -> float:
    return sum(v for k, v in series.items() if k.startswith(name + "{")) + series[
        name + "_OVERFLOW"]


async def until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def produce_then_consume(service: Any, topic: str, count: int, size: int) -> Any:
    """count entries of size bytes written to a backlog of subscription "sub", then read and
    acknowledged by a consumer; the loaded topic once the mark-delete position moved."""
    client = pulsar.Client(service.broker_service_url,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        first = await asyncio.to_thread(client.subscribe, topic, "sub")
        await asyncio.to_thread(first.close)
        producer = await asyncio.to_thread(client.create_producer, topic, batching_enabled=False)
        for _ in range(count):
            await asyncio.to_thread(producer.send, b"x" * size)
        consumer = await asyncio.to_thread(client.subscribe, topic, "sub")
        for _ in range(count):
            received = await asyncio.to_thread(consumer.receive, 10_000)
            await asyncio.to_thread(consumer.acknowledge, received)
        loaded = await service.get_topic(naming.TopicName.parse(topic), create=False)
        assert loaded is not None
        cursor = loaded.subscriptions["sub"].cursor
        await until(lambda: cursor.mark_delete_position == loaded.ledger.last_confirmed_entry)
        return loaded
    finally:
        await asyncio.to_thread(client.close)


async def test_managed_ledger_series_count_adds_reads_and_cache_hits_of_the_interval(
        running: standalone_module.Standalone) -> None:
    service = running.service
    assert service is not None
    metrics = web_metrics.BrokerMetrics(service, rates.RateTracker(service))
    try:
        metrics.sample_ledgers(100.0)
        before = ledger_series(metrics)
        loaded = await produce_then_consume(
            service, "persistent://public/default/ml-series", count=3, size=200)
        metrics.sample_ledgers(102.0)  # a 2 s interval holding the 3 adds and their reads
        series = ledger_series(metrics)
        metrics.sample_ledgers(104.0)  # a quiet interval
        quiet = ledger_series(metrics)
    finally:
        metrics.shutdown()
    assert series["pulsar_ml_AddEntrySucceed"] == 3
    assert series["pulsar_ml_AddEntryErrors"] == 0
    assert series["pulsar_ml_ReadEntriesSucceeded"] == 3
    assert series["pulsar_ml_ReadEntriesErrors"] == 0
    # Buckets are entries per second of the interval, as Apache divides them by its period.
    assert bucket_sum(series, "pulsar_ml_AddEntryLatencyBuckets") == 1.5
    assert bucket_sum(series, "pulsar_ml_LedgerAddEntryLatencyBuckets") == 1.5
    assert series["pulsar_ml_EntrySizeBuckets{128.0_512.0}"] == 1.5  # 200 bytes + metadata
    assert bucket_sum(series, "pulsar_ml_EntrySizeBuckets") == 1.5
    assert bucket_sum(series, "pulsar_ml_LedgerSwitchLatencyBuckets") == 0
    write_quorum = service.ledger_factory.default_config.write_quorum
    assert series["pulsar_ml_AddEntryWithReplicasBytesRate"] == (
        loaded.ledger.total_size * write_quorum / 2)
    assert series["pulsar_ml_MarkDeleteRate"] >= 0.5
    # The backlog was read just after it was written: from the cache, none from the bookies.
    assert series["pulsar_ml_ReadEntriesOpsCacheMissesRate"] == 0
    assert series["pulsar_ml_cache_hits_rate"] == 1.5
    assert series["pulsar_ml_cache_hits_throughput"] == loaded.ledger.total_size / 2
    assert series["pulsar_ml_cache_misses_rate"] == 0
    assert series["pulsar_ml_cache_entries"] >= 3
    assert series["pulsar_ml_cache_used_size"] >= loaded.ledger.total_size
    assert series["pulsar_ml_cache_inserted_entries_total"] >= (
        before["pulsar_ml_cache_inserted_entries_total"] + 3)
    assert quiet["pulsar_ml_AddEntrySucceed"] == quiet["pulsar_ml_ReadEntriesSucceeded"] == 0
    assert bucket_sum(quiet, "pulsar_ml_AddEntryLatencyBuckets") == 0
    assert quiet["pulsar_ml_cache_hits_rate"] == 0


async def test_reads_past_a_disabled_cache_are_misses_and_a_rollover_is_a_ledger_switch(
        tmp_path: pathlib.Path) -> None:
    instance = in_process_standalone(
        tmp_path, managedLedgerCacheSizeMB="0", managedLedgerMaxEntriesPerLedger="2",
        managedLedgerMinLedgerRolloverTimeMinutes="0")
    await instance.start()
    service = instance.service
    assert service is not None
    metrics = web_metrics.BrokerMetrics(service, rates.RateTracker(service))
    try:
        metrics.sample_ledgers(100.0)
        await produce_then_consume(
            service, "persistent://public/default/ml-misses", count=3, size=10)
        metrics.sample_ledgers(102.0)
        series = ledger_series(metrics)
    finally:
        metrics.shutdown()
        await instance.stop()
    assert series["pulsar_ml_ReadEntriesSucceeded"] == 3
    assert series["pulsar_ml_ReadEntriesOpsCacheMissesRate"] == 1.5
    assert series["pulsar_ml_cache_misses_rate"] == 1.5
    assert series["pulsar_ml_cache_hits_rate"] == 0
    assert series["pulsar_ml_cache_entries"] == series["pulsar_ml_cache_used_size"] == 0
    assert series["pulsar_ml_EntrySizeBuckets{0.0_128.0}"] == 1.5
    # Two entries per ledger: the third add rolled the ledger over.
    assert bucket_sum(series, "pulsar_ml_LedgerSwitchLatencyBuckets") >= 0.5
