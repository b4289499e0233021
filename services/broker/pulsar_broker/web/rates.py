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


#: Counters of one sample: messages and bytes in, messages and bytes out, entries added,
#: entries and bytes read (the last three 0 where they do not apply).
_Counts = tuple[int, int, int, int, int, int, int]
#: The rates of counters that did not move (shared: Rates is frozen).
_NO_RATES = Rates()


def _rates(elapsed: float, old: _Counts, new: _Counts) -> Rates:
    if elapsed <= 0:
        return Rates()
    return Rates(
        msg_rate_in=max(0, new[0] - old[0]) / elapsed,
        msg_throughput_in=max(0, new[1] - old[1]) / elapsed,
        msg_rate_out=max(0, new[2] - old[2]) / elapsed,
        msg_throughput_out=max(0, new[3] - old[3]) / elapsed,
        entry_rate_in=max(0, new[4] - old[4]) / elapsed,
        entry_rate_read=max(0, new[5] - old[5]) / elapsed,
        throughput_read=max(0, new[6] - old[6]) / elapsed,
    )


class RateTracker:
    """Samples are kept as plain tuples and idle keys get the shared _NO_RATES, so a tick
    over thousands of idle topics allocates little (issue 16's idle broker)."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self._out = out_counters.OutCounters()
        #: key -> its counters at the last tick. Every key was recorded at the last tick
        #: (a key not recorded in a tick is dropped at its end), so all were taken at _last_s.
        self._samples: dict[str, _Counts] = {}
        #: key -> the tick that recorded it last (apart from _samples, so that a key whose
        #: counters did not move stores nothing new: objects that outlive a tick feed the
        #: cyclic garbage collector's full collections, heavy on a heap of 10,000 topics).
        self._taken_in: dict[str, int] = {}
        self._rates: dict[str, Rates] = {}
        self._tick = 0
        self._last_s = 0.0
        #: Distinct keys recorded during the current tick.
        self._observed = 0

    def topic_rates(self, topic: str) -> Rates:
        return self._rates.get(topic, _NO_RATES)

    def subscription_rates(self, topic: str, subscription: str) -> Rates:
        return self._rates.get(f"{topic} {subscription}", _NO_RATES)

    def producer_rates(self, topic: str, producer: Any) -> Rates:
        return self._rates.get(_producer_key(topic, producer), _NO_RATES)

    def consumer_rates(self, topic: str, subscription: str, consumer: Any) -> Rates:
        return self._rates.get(_consumer_key(topic, subscription, consumer), _NO_RATES)

    def tick(self, now_s: float) -> None:
        self._tick += 1
        self._observed = 0
        topics: list[PersistentTopic | NonPersistentTopic] = [
            *self.service.loaded_topics, *self.service.non_persistent.loaded]
        for topic in topics:
            self._sample_topic(topic, now_s)
        if self._observed != len(self._taken_in):
            for key in [k for k, taken_in in self._taken_in.items() if taken_in != self._tick]:
                self._taken_in.pop(key, None)
                self._samples.pop(key, None)
                self._rates.pop(key, None)
        self._out.end_pass()
        self._last_s = now_s

    def _sample_topic(self, topic: PersistentTopic | NonPersistentTopic, now_s: float) -> None:
        name = str(topic.name)
        everyone = [c for s in topic.subscriptions.values() for c in s.consumers]
        msg_out, bytes_out = self._out.totals(name, everyone)
        if isinstance(topic, PersistentTopic):
            # A subscription removed (or its dispatcher replaced) takes its read counts with
            # it: the read rate of that interval comes out low, never negative.
            dispatchers = [s.dispatcher for s in topic.subscriptions.values()]
            self._record(name, now_s, (
                topic.msg_in, topic.bytes_in, msg_out, bytes_out, topic.entries_in,
                sum(d.entries_read for d in dispatchers), sum(d.bytes_read for d in dispatchers)))
        else:
            self._record(name, now_s, (topic.msg_in, topic.bytes_in, msg_out, bytes_out, 0, 0, 0))
        for sub_name, subscription in topic.subscriptions.items():
            key = f"{name} {sub_name}"
            sub_msgs, sub_bytes = self._out.totals(key, subscription.consumers)
            self._record(key, now_s, (0, 0, sub_msgs, sub_bytes, 0, 0, 0))
            for consumer in subscription.consumers:
                self._record(_consumer_key(name, sub_name, consumer), now_s,
                             (0, 0, consumer.msg_out, consumer.bytes_out, 0, 0, 0))
        for producer in topic.producers.values():
            self._record(_producer_key(name, producer), now_s,
                         (producer.msg_in, producer.bytes_in, 0, 0, 0, 0, 0))

    def _record(self, key: str, now_s: float, counts: _Counts) -> None:
        if self._taken_in.get(key) != self._tick:
            self._taken_in[key] = self._tick
            self._observed += 1
        previous = self._samples.get(key)
        if previous is None:
            self._samples[key] = counts
        elif previous == counts:
            # Counters that did not move have zero rates over any interval.
            self._rates[key] = _NO_RATES
        else:
            self._rates[key] = _rates(now_s - self._last_s, previous, counts)
            self._samples[key] = counts


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
