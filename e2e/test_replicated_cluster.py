"""A broker on a 3-bookie cluster (E=3, WQ=2, AQ=2) loses nothing acknowledged when a
bookie or the broker is killed, and moves off a stalled bookie."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time

import pulsar
from pulsar_broker.testing import read_topic
from pulsar_common.metadata import factory

TOPIC = "persistent://public/default/replicated"


def _payload(i: int) -> bytes:
    return b"message-%06d-" % i + b"x" * (i % 50)


class Stream:
    """Publishes continuously from a thread, remembering every acknowledged message."""

    def __init__(self, client: pulsar.Client) -> None:
        self.producer = client.create_producer(TOPIC, batching_enabled=False,
                                               send_timeout_millis=60_000,
                                               block_if_queue_full=True)
        self.acked: dict[int, pulsar.MessageId] = {}
        self.errors: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set() and self.sent < 20_000:
            i = self.sent
            self.sent += 1
            self.producer.send_async(_payload(i), lambda res, mid, i=i: self._done(res, mid, i))
            if i % 50 == 0:
                time.sleep(0.01)

    def _done(self, res: pulsar.Result, mid: pulsar.MessageId, i: int) -> None:
        if res == pulsar.Result.Ok:
            self.acked[i] = mid
        else:
            self.errors.append(f"{i}: {res}")

    def start(self) -> Stream:
        self._thread.start()
        return self

    def wait_for_acks(self, count: int, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"only {len(self.acked)} of {count} acked"
            time.sleep(0.05)

    def finish(self) -> None:
        self._stop.set()
        self._thread.join()
        self.producer.flush()


def _assert_all_acked_readable(stream: Stream, stored: list[bytes]) -> None:
    present = set(stored)
    missing = [i for i in stream.acked if _payload(i) not in present]
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:5]}"


async def _ledger_records(metadata_url: str) -> list[dict]:
    store = await factory.create_store(metadata_url)
    try:
        records = []
        for name in await store.get_children("/ledgers"):
            if name.isdigit():
                result = await store.get(f"/ledgers/{name}")
                if result is not None:
                    records.append(json.loads(result.value))
        return records
    finally:
        await store.close()


def test_killing_a_bookie_mid_stream_loses_no_acknowledged_message(cluster):
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=60)
    stream = Stream(client).start()
    stream.wait_for_acks(300)
    victim = cluster.bookies[0]
    victim.kill()
    count_at_kill = len(stream.acked)
    stream.wait_for_acks(count_at_kill + 500)
    stream.finish()
    client.close()
    assert not stream.errors, stream.errors[:5]
    stored = read_topic(cluster.service_url, TOPIC)
    _assert_all_acked_readable(stream, stored)
    assert stored == sorted(stored), "messages must stay in publish order"


def test_killing_the_broker_recovers_its_ledger_and_loses_nothing(cluster):
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=60)
    stream = Stream(client).start()
    stream.wait_for_acks(500)
    broker = cluster.brokers[0]
    broker.kill()
    acked_before_kill = dict(stream.acked)
    broker.start()
    # The producer reconnects to the restarted broker and sends what was pending.
    stream.finish()
    client.close()
    assert not stream.errors, stream.errors[:5]
    _assert_all_acked_readable(stream, read_topic(cluster.service_url, TOPIC))
    records = asyncio.run(_ledger_records(cluster.metadata_url))
    first = min(records, key=lambda r: r["ledgerId"])
    assert first["state"] == "CLOSED"
    last_acked_entry = max(mid.entry_id() for mid in acked_before_kill.values()
                           if mid.ledger_id() == first["ledgerId"])
    assert first["lastEntryId"] >= last_acked_entry


def test_a_stalled_bookie_is_replaced_by_an_ensemble_change(cluster):
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=60)
    stream = Stream(client).start()
    stream.wait_for_acks(200)
    records = asyncio.run(_ledger_records(cluster.metadata_url))
    ensemble = records[0]["ensembles"][0]["bookies"]
    stalled = next(b for b in cluster.bookies if b.bookie_id in ensemble)
    os.kill(stalled.pid, signal.SIGSTOP)
    try:
        count = len(stream.acked)
        stream.wait_for_acks(count + 300, timeout_s=90)
        records = asyncio.run(_ledger_records(cluster.metadata_url))
        current = max(records, key=lambda r: r["ledgerId"])
        latest_ensemble = current["ensembles"][-1]["bookies"]
        assert stalled.bookie_id not in latest_ensemble
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    stream.finish()
    client.close()
    assert not stream.errors, stream.errors[:5]
    _assert_all_acked_readable(stream, read_topic(cluster.service_url, TOPIC))
