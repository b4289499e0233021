"""`pulsar bookie` as a real child process: crash durability over the network, HTTP, clean stop."""

from __future__ import annotations

import asyncio
import json
import pathlib
import random
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pulsar_bookie import errors, types
from pulsar_bookie.net import client
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.service import testing
from pulsar_common import process_metrics

KEY = b"process-key"
L = types.LedgerId
E = types.EntryId


def payload(ledger: int, entry: int) -> bytes:
    rng = random.Random(f"{ledger}:{entry}")
    return rng.randbytes(rng.randint(1, 2048))


@pytest.fixture
def bookie_process(tmp_path: pathlib.Path) -> Iterator[testing.BookieProcess]:
    process = testing.BookieProcess(tmp_path / "bookie")
    yield process
    process.kill()


async def test_acknowledged_adds_survive_sigkill_of_the_bookie_process(
    bookie_process: testing.BookieProcess,
) -> None:
    await asyncio.to_thread(bookie_process.start)
    rpc = client.BookieClient(bookie_process.bookie_id, client.ClientSettings(add_timeout_s=30))
    acked: list[tuple[int, int]] = []
    failures: list[BaseException] = []
    enough = asyncio.Event()

    async def writer(ledger: int) -> None:
        for entry in range(100_000):
            try:
                await rpc.add_entry(L(ledger), E(entry), E(entry - 1), payload(ledger, entry), KEY)
            except errors.BookieError as exc:
                failures.append(exc)
                return
            acked.append((ledger, entry))
            if len(acked) >= 600:
                enough.set()

    # Several writers per ledger keep many adds in flight on the one connection.
    writers = [asyncio.ensure_future(writer(ledger)) for ledger in range(1, 9)]
    await asyncio.wait_for(enough.wait(), 60)
    bookie_process.kill()
    await asyncio.wait_for(asyncio.gather(*writers), 30)
    assert len(failures) == len(writers)
    assert all(isinstance(f, errors.BookieUnavailableError) for f in failures)

    await asyncio.to_thread(bookie_process.start)
    for ledger, entry in acked:  # the same client reconnects on first use
        stored = await rpc.read_entry(L(ledger), E(entry))
        assert stored.payload == payload(ledger, entry), (ledger, entry)
    await rpc.close()


async def test_http_endpoints_answer_and_sigterm_stops_cleanly(
    bookie_process: testing.BookieProcess,
) -> None:
    await asyncio.to_thread(bookie_process.start)
    assert bookie_process.http_get("/heartbeat") == (200, b"OK\n")
    assert bookie_process.http_get("/api/v1/bookie/is_ready")[0] == 200
    status, body = bookie_process.http_get("/api/v1/bookie/state")
    state = json.loads(body)
    assert status == 200
    assert state["running"] is True and state["readOnly"] is False
    assert state["bookieId"] == bookie_process.bookie_id
    assert state["registered"] is False  # no metadataServiceUri

    rpc = client.BookieClient(bookie_process.bookie_id)
    await asyncio.gather(*(rpc.add_entry(L(21), E(i), E(i - 1), b"x" * 10, KEY)
                           for i in range(20)))
    assert (await rpc.read_entry(L(21), E(3))).payload == b"x" * 10
    ledgers = json.loads(bookie_process.http_get("/api/v1/bookie/list_ledgers")[1])
    assert ledgers == {"21": {"lastAddConfirmed": 18, "lastEntryId": 19, "fenced": False}}

    status, text = bookie_process.http_get("/metrics")
    families = {f.name: f for f in text_string_to_metric_families(text.decode())}
    adds = families["bookkeeper_server_add_entry_request_seconds"]
    counts = [s.value for s in adds.samples
              if s.name.endswith("_count") and s.labels.get("success") == "true"]
    assert counts == [20.0]
    assert families["bookie_server_status"].samples[0].value == 1.0
    assert families["bookie_journal_sync"].samples[0].value >= 1.0
    assert families["bookie_journal_sync_seconds"].samples[0].value > 0.0
    assert "bookie_read_cache_hits" in families
    assert families["bookie_journal_queue_size"].samples[0].value >= 0.0
    # BookKeeper's own series, with its exact mixed-case names and labels.
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text.decode()) for s in f.samples}
    assert samples[("bookie_SERVER_STATUS", ())] == 1.0
    # The process's own series, as the broker's /metrics has them.
    assert set(process_metrics.PROCESS_SERIES) <= {name for name, _ in samples}
    assert samples[("bookkeeper_server_ADD_ENTRY_count", (("success", "true"),))] == 20.0
    assert samples[("bookkeeper_server_ADD_ENTRY_REQUEST_count", (("success", "true"),))] == 20.0
    median = samples[("bookkeeper_server_ADD_ENTRY_REQUEST",
                      (("quantile", "0.5"), ("success", "true")))]
    assert 0.0 < median <= samples[("bookkeeper_server_ADD_ENTRY_REQUEST",
                                    (("quantile", "1.0"), ("success", "true")))]
    assert samples[("bookie_journal_JOURNAL_SYNC_count", (("success", "true"),))] >= 1.0
    assert ("bookie_journal_JOURNAL_QUEUE_SIZE", ()) in samples
    assert samples[("bookie_WRITE_BYTES", ())] >= 200.0
    assert samples[("bookkeeper_server_READ_ENTRY_count", (("success", "true"),))] >= 1.0

    status, body = bookie_process.http("PUT", "/api/v1/bookie/state/readonly",
                                       b'{"readOnly": true}')
    assert status == 200 and json.loads(body)["readOnly"] is True
    with pytest.raises(net_errors.BookieReadOnlyError):
        await rpc.add_entry(L(21), E(20), E(19), b"y", KEY)
    assert bookie_process.http("PUT", "/api/v1/bookie/state/readonly", b"{}")[0] == 400
    bookie_process.http("PUT", "/api/v1/bookie/state/readonly", b'{"readOnly": false}')
    await rpc.add_entry(L(21), E(20), E(19), b"x" * 10, KEY)

    assert await asyncio.to_thread(bookie_process.stop) == 0
    assert "bookie 127.0.0.1" in bookie_process.log_tail() and "stopped" in bookie_process.log_tail()
    await asyncio.to_thread(bookie_process.start)
    assert (await rpc.read_entry(L(21), E(20))).payload == b"x" * 10
    await rpc.close()
