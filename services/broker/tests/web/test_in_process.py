"""The web app of an in-process standalone: the add-entry latency hook and app shutdown."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator

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
