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
from pulsar_broker.web import hooks, rates, stats
from pulsar_common import naming, testing


@pytest.fixture
async def running(tmp_path: pathlib.Path) -> AsyncIterator[standalone_module.Standalone]:
    overrides = {"brokerServicePort": str(testing.free_port()),
                 "webServicePort": str(testing.free_port()),
                 "bookiePort": str(testing.free_port()),
                 "advertisedAddress": "127.0.0.1", "bindAddress": "127.0.0.1",
                 "journalSyncData": "false"}
    data_dir = tmp_path / "data"
    settings = standalone_module.load_settings(data_dir, None, overrides)
    instance = standalone_module.Standalone(data_dir, settings)
    await instance.start()
    try:
        yield instance
    finally:
        await instance.stop()


async def test_add_entry_latency_hook_feeds_the_histogram(
        running: standalone_module.Standalone) -> None:
    assert running.service is not None
    topic = "persistent://public/default/latency"
    hooks.record_add_entry_latency(topic, 0.003)
    hooks.record_add_entry_latency(topic, 0.3)
    url = f"{running.service.web_service_url}/metrics"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        text = await response.text()
    samples = {
        (s.name, s.labels.get("le")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("topic") == topic
    }
    assert samples[("pulsar_storage_write_latency_seconds_count", None)] == 2
    assert samples[("pulsar_storage_write_latency_seconds_bucket", "0.005")] == 1
    assert samples[("pulsar_storage_write_latency_seconds_bucket", "1.0")] == 2
    assert samples[("pulsar_storage_write_latency_seconds_sum", None)] == pytest.approx(0.303)


async def test_a_cleaned_up_app_no_longer_receives_latency_samples(
        running: standalone_module.Standalone) -> None:
    assert running.service is not None
    live_before = hooks.add_entry_recorder_count()
    runner = web.AppRunner(web_app.create_app(running.service))
    await runner.setup()
    assert hooks.add_entry_recorder_count() == live_before + 1
    await runner.cleanup()
    assert hooks.add_entry_recorder_count() == live_before


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
