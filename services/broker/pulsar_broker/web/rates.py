"""Message rates and throughputs, from counters sampled at a fixed interval.

Apache's stats report msgRateIn/Out and msgThroughputIn/Out computed over
the last stats period. A RateTracker samples every loaded topic's counters
every RATE_INTERVAL_S and keeps the rates between its last two samples; the
stats endpoints and /metrics read them. `tick(now_s)` is public so tests can
drive it with their own clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import astuple, dataclass
from typing import Any

from aiohttp import web

from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics import out_counters
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic

#: Seconds between samples (Apache's statsUpdateFrequencyInSecs is 60; shorter reads better).
RATE_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Rates:
    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    #: Entries added to / read from the managed ledger per second, bytes read per second
    #: (persistent topics only: Apache's storage write and read rates).
    entry_rate_in: float = 0.0
    entry_rate_read: float = 0.0
    throughput_read: float = 0.0

    def __add__(self, other: Rates) -> Rates:
        return Rates(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


@dataclass(frozen=True)
class _Sample:
    at_s: float
    msg_in: int
    bytes_in: int
    msg_out: int
    bytes_out: int
    entries_in: int = 0
    entries_read: int = 0
    bytes_read: int = 0


def _rates(old: _Sample, new: _Sample) -> Rates:
    elapsed = new.at_s - old.at_s
    if elapsed <= 0:
        return Rates()
    return Rates(
        msg_rate_in=max(0, new.msg_in - old.msg_in) / elapsed,
        msg_throughput_in=max(0, new.bytes_in - old.bytes_in) / elapsed,
        msg_rate_out=max(0, new.msg_out - old.msg_out) / elapsed,
        msg_throughput_out=max(0, new.bytes_out - old.bytes_out) / elapsed,
        entry_rate_in=max(0, new.entries_in - old.entries_in) / elapsed,
        entry_rate_read=max(0, new.entries_read - old.entries_read) / elapsed,
        throughput_read=max(0, new.bytes_read - old.bytes_read) / elapsed,
    )


class RateTracker:
    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self._out = out_counters.OutCounters()
        self._samples: dict[str, _Sample] = {}
        self._rates: dict[str, Rates] = {}

    def topic_rates(self, topic: str) -> Rates:
        return self._rates.get(topic, Rates())

    def subscription_rates(self, topic: str, subscription: str) -> Rates:
        return self._rates.get(f"{topic} {subscription}", Rates())

    def producer_rates(self, topic: str, producer: Any) -> Rates:
        return self._rates.get(_producer_key(topic, producer), Rates())

    def consumer_rates(self, topic: str, subscription: str, consumer: Any) -> Rates:
        return self._rates.get(_consumer_key(topic, subscription, consumer), Rates())

    def tick(self, now_s: float) -> None:
        live: set[str] = set()
        topics: list[PersistentTopic | NonPersistentTopic] = [
            *self.service.loaded_topics, *self.service.non_persistent.loaded]
        for topic in topics:
            live.update(self._sample_topic(topic, now_s))
        for key in [k for k in self._samples if k not in live]:
            self._samples.pop(key, None)
            self._rates.pop(key, None)
        self._out.end_pass()

    def _sample_topic(self, topic: PersistentTopic | NonPersistentTopic,
                      now_s: float) -> list[str]:
        name = str(topic.name)
        everyone = [c for s in topic.subscriptions.values() for c in s.consumers]
        msg_out, bytes_out = self._out.totals(name, everyone)
        keys = [name]
        if isinstance(topic, PersistentTopic):
            # A subscription removed (or its dispatcher replaced) takes its read counts with
            # it: the read rate of that interval comes out low, never negative.
            dispatchers = [s.dispatcher for s in topic.subscriptions.values()]
            self._record(name, _Sample(
                now_s, topic.msg_in, topic.bytes_in, msg_out, bytes_out, topic.entries_in,
                sum(d.entries_read for d in dispatchers), sum(d.bytes_read for d in dispatchers)))
        else:
            self._record(name, _Sample(now_s, topic.msg_in, topic.bytes_in, msg_out, bytes_out))
        for sub_name, subscription in topic.subscriptions.items():
            key = f"{name} {sub_name}"
            sub_msgs, sub_bytes = self._out.totals(key, subscription.consumers)
            self._record(key, _Sample(now_s, 0, 0, sub_msgs, sub_bytes))
            keys.append(key)
            for consumer in subscription.consumers:
                key = _consumer_key(name, sub_name, consumer)
                self._record(key, _Sample(now_s, 0, 0, consumer.msg_out, consumer.bytes_out))
                keys.append(key)
        for producer in topic.producers.values():
            key = _producer_key(name, producer)
            self._record(key, _Sample(now_s, producer.msg_in, producer.bytes_in, 0, 0))
            keys.append(key)
        return keys

    def _record(self, key: str, sample: _Sample) -> None:
        previous = self._samples.get(key)
        if previous is not None:
            self._rates[key] = _rates(previous, sample)
        self._samples[key] = sample


def _producer_key(topic: str, producer: Any) -> str:
    # The object id tells a reconnected producer with a reused id from the old one.
    return f"{topic} producer {producer.producer_id} {id(producer)}"


def _consumer_key(topic: str, subscription: str, consumer: Any) -> str:
    return f"{topic} {subscription} consumer {consumer.consumer_id} {id(consumer)}"


TRACKER_KEY = web.AppKey("rate_tracker", RateTracker)


def install(app: web.Application, service: BrokerService,
            interval_s: float = RATE_INTERVAL_S) -> None:
    """Give app a RateTracker sampled every interval_s while the app runs."""
    tracker = RateTracker(service)
    app[TRACKER_KEY] = tracker

    async def sampling(app: web.Application) -> AsyncIterator[None]:
        async def loop() -> None:
            while True:
                tracker.tick(time.monotonic())
                await asyncio.sleep(interval_s)

        task = asyncio.create_task(loop(), name="web-rate-sampler")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(sampling)
