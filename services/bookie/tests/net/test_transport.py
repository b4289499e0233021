"""Client and server over real loopback sockets, on a real storage engine."""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import Callable

import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.net import client, server, wire
from pulsar_bookie.net import errors as net_errors

from .conftest import KEY, Serve

L = types.LedgerId
E = types.EntryId


async def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll a condition the event loop will make true (each poll yields to the loop)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


def payload(ledger: int, entry: int) -> bytes:
    rng = random.Random(ledger * 1_000_003 + entry)
    return rng.randbytes(rng.randint(0, 4096))


async def test_pipelined_adds_and_reads_on_one_connection_match_by_request_id(
    serve: Serve,
) -> None:
    bookie = await serve()
    rpc = bookie.client
    count = 400
    await asyncio.gather(*(
        rpc.add_entry(L(ledger), E(entry), E(entry - 1), payload(ledger, entry), KEY)
        for entry in range(count) for ledger in (1, 2)
    ))
    order = [(ledger, entry) for entry in range(count) for ledger in (1, 2)]
    random.Random(5).shuffle(order)
    entries = await asyncio.gather(*(rpc.read_entry(L(lg), E(en)) for lg, en in order))
    for (ledger, entry), stored in zip(order, entries):
        assert (stored.ledger_id, stored.entry_id) == (ledger, entry)
        assert stored.payload == payload(ledger, entry)
        assert stored.last_add_confirmed == entry - 1
    assert bookie.server.connection_count == 1


async def test_responses_complete_out_of_order(serve: Serve) -> None:
    bookie = await serve()
    rpc = bookie.client
    await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
    # The long poll is sent first and answered last: after the adds behind it.
    poll = asyncio.ensure_future(rpc.wait_last_add_confirmed(L(1), E(4), 30_000))
    await asyncio.gather(*(rpc.add_entry(L(1), E(i), E(i - 1), b"x", KEY) for i in range(1, 6)))
    assert not poll.done()
    await rpc.add_entry(L(1), E(6), E(5), b"x", KEY)
    assert await asyncio.wait_for(poll, 30) == 5


async def test_large_entries_read_back_byte_identical(serve: Serve) -> None:
    bookie = await serve()
    big = os.urandom(4 * 1024 * 1024)
    await bookie.client.add_entry(L(3), E(0), E(-1), big, KEY)
    await bookie.client.add_entry(L(3), E(1), E(0), b"", KEY)
    assert (await bookie.client.read_entry(L(3), E(0))).payload == big
    assert (await bookie.client.read_entry(L(3), E(1))).payload == b""


async def test_missing_entries_and_ledgers_raise_their_errors(serve: Serve) -> None:
    rpc = (await serve()).client
    with pytest.raises(errors.NoSuchLedgerError):
        await rpc.read_entry(L(9), E(0))
    await rpc.add_entry(L(9), E(0), E(-1), b"x", KEY)
    with pytest.raises(errors.NoSuchEntryError):
        await rpc.read_entry(L(9), E(1))
    with pytest.raises(errors.UnauthorizedAccessError):
        await rpc.add_entry(L(9), E(1), E(0), b"x", b"other-key")


async def test_fenced_ledger_refuses_adds_unless_recovery(serve: Serve) -> None:
    rpc = (await serve()).client
    await rpc.add_entry(L(4), E(0), E(-1), b"a", KEY)
    await rpc.add_entry(L(4), E(1), E(0), b"b", KEY)
    assert await rpc.fence_ledger(L(4), KEY) == 0
    with pytest.raises(errors.LedgerFencedError):
        await rpc.add_entry(L(4), E(2), E(1), b"c", KEY)
    await rpc.add_entry(L(4), E(2), E(1), b"c", KEY, recovery=True)
    assert (await rpc.read_entry(L(4), E(2))).payload == b"c"


async def test_add_and_read_futures_complete_with_the_bookies_answer_or_error(
        serve: Serve) -> None:
    bookie = await serve()
    # Before the connection is open (it opens on the way) and on the open connection.
    for entry in (0, 1):
        await bookie.client.add_entry_future(L(6), E(entry), E(entry - 1), b"xyz"[entry:],
                                             KEY, 5.0)
    reader = client.BookieClient(bookie.bookie_id)  # a second client, not connected yet
    for entry in (1, 0):
        stored = await reader.read_entry_future(L(6), E(entry), 5.0)
        assert (stored.ledger_id, stored.entry_id, stored.payload) == (6, entry, b"xyz"[entry:])
    assert stored.last_add_confirmed == -1
    with pytest.raises(errors.NoSuchEntryError):
        await reader.read_entry_future(L(6), E(2), 5.0)
    await reader.close()
    await bookie.client.fence_ledger(L(6), KEY)
    with pytest.raises(errors.LedgerFencedError):
        await bookie.client.add_entry_future(L(6), E(2), E(1), b"z", KEY, 5.0)


async def test_a_recovery_read_fences_the_ledger(serve: Serve) -> None:
    bookie = await serve()
    rpc = bookie.client
    await rpc.add_entry(L(5), E(0), E(-1), b"a", KEY)
    entry = await rpc.read_entry(L(5), E(0), fence=True, master_key=KEY)
    assert entry.payload == b"a"
    assert await bookie.storage.is_fenced(L(5))
    with pytest.raises(errors.LedgerFencedError):
        await rpc.add_entry(L(5), E(1), E(0), b"b", KEY)
    with pytest.raises(errors.NoSuchEntryError):  # recovery read past the end, still fencing
        await rpc.read_entry(L(5), E(1), fence=True, master_key=KEY)


async def test_long_poll_returns_when_a_new_add_arrives(serve: Serve) -> None:
    rpc = (await serve()).client
    await rpc.add_entry(L(6), E(0), E(-1), b"a", KEY)
    await rpc.add_entry(L(6), E(1), E(0), b"b", KEY)
    assert await rpc.read_last_add_confirmed(L(6)) == 0
    poll = asyncio.ensure_future(rpc.wait_last_add_confirmed(L(6), E(0), 60_000))
    await asyncio.sleep(0)  # the poll is on the wire before the add
    await rpc.add_entry(L(6), E(2), E(1), b"c", KEY)
    assert await asyncio.wait_for(poll, 30) == 1


async def test_long_poll_returns_the_current_lac_after_its_timeout(serve: Serve) -> None:
    rpc = (await serve()).client
    await rpc.add_entry(L(7), E(0), E(-1), b"a", KEY)
    await rpc.add_entry(L(7), E(1), E(0), b"b", KEY)
    assert await rpc.wait_last_add_confirmed(L(7), E(0), 200) == 0
    assert await rpc.wait_last_add_confirmed(L(7), E(-1), 60_000) == 0  # already past: at once
    with pytest.raises(errors.NoSuchLedgerError):
        await rpc.wait_last_add_confirmed(L(70), E(-1), 100)


async def test_a_malformed_frame_closes_only_its_connection(serve: Serve) -> None:
    bookie = await serve()
    await bookie.client.add_entry(L(8), E(0), E(-1), b"a", KEY)
    reader, writer = await asyncio.open_connection("127.0.0.1", bookie.server.port)
    writer.write(b"GET / HTTP/1.1\r\nHost: bookie\r\n\r\n" + bytes(64))
    await writer.drain()
    assert await asyncio.wait_for(reader.read(), 30) == b""  # closed by the bookie
    writer.close()
    assert (await bookie.client.read_entry(L(8), E(0))).payload == b"a"
    await bookie.client.add_entry(L(8), E(1), E(0), b"b", KEY)


async def test_adds_over_the_limit_get_too_many_requests_at_once(serve: Serve) -> None:
    # Each journal group waits 0.5 s, so the first two adds stay in progress meanwhile.
    bookie = await serve(
        server.ServerSettings(adds_in_progress_max=2),
        journalMaxGroupWaitMSec=500,
        journalSyncData=True,
    )
    results = await asyncio.gather(
        *(bookie.client.add_entry(L(10), E(i), E(i - 1), b"x", KEY) for i in range(10)),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, errors.TooManyRequestsError)]
    assert len(refused) == 8
    assert results[:2] == [None, None]
    assert bookie.server.adds_in_progress == 0


async def test_reads_over_the_limit_get_too_many_requests(serve: Serve) -> None:
    bookie = await serve(server.ServerSettings(reads_in_progress_max=1))
    await bookie.client.add_entry(L(11), E(0), E(-1), b"x", KEY)
    await bookie.storage.flush()  # reads now go to the entry log, off the event loop
    results = await asyncio.gather(
        *(bookie.client.read_entry(L(11), E(0)) for _ in range(20)), return_exceptions=True
    )
    assert any(isinstance(r, errors.TooManyRequestsError) for r in results)
    assert any(not isinstance(r, Exception) for r in results)


async def test_read_only_bookie_refuses_adds_and_serves_reads(serve: Serve) -> None:
    bookie = await serve()
    await bookie.client.add_entry(L(12), E(0), E(-1), b"x", KEY)
    bookie.server.read_only = True
    with pytest.raises(net_errors.BookieReadOnlyError) as raised:
        await bookie.client.add_entry(L(12), E(1), E(0), b"y", KEY)
    assert isinstance(raised.value, errors.BookieUnavailableError)
    assert (await bookie.client.read_entry(L(12), E(0))).payload == b"x"
    assert await bookie.client.fence_ledger(L(12), KEY) == -1


async def test_unreachable_bookie_is_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        rpc = client.BookieClient(types.BookieId(f"127.0.0.1:{port}"))
        with pytest.raises(errors.BookieUnavailableError):
            await rpc.read_last_add_confirmed(L(1))
        await rpc.close()


async def test_a_silent_bookie_times_calls_out() -> None:
    async def ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    silent = await asyncio.start_server(ignore, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    rpc = client.BookieClient(
        types.BookieId(f"127.0.0.1:{port}"),
        client.ClientSettings(add_timeout_s=0.2, read_timeout_s=0.2),
    )
    with pytest.raises(errors.BookieUnavailableError, match="timed out"):
        await rpc.add_entry(L(1), E(0), E(-1), b"x", KEY)
    with pytest.raises(errors.BookieUnavailableError, match="timed out"):
        await rpc.read_entry(L(1), E(0))
    await rpc.close()
    silent.close()
    await silent.wait_closed()


async def test_add_and_read_futures_time_out_after_their_own_timeout_not_the_clients(
) -> None:
    """The writer and the reader pass addEntryTimeoutMs and readEntryTimeoutMs with each
    call: that one applies, on the way to an open connection and on it (the client's own
    timeouts are a minute here)."""
    async def ignore(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    silent = await asyncio.start_server(ignore, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    for call in ("add", "read"):
        rpc = client.BookieClient(types.BookieId(f"127.0.0.1:{port}"),
                                  client.ClientSettings(add_timeout_s=60, read_timeout_s=60))
        for entry in (0, 1):  # the first connects, the second finds the connection open
            answer = (rpc.add_entry_future(L(1), E(entry), E(-1), b"x", KEY, 0.2)
                      if call == "add" else rpc.read_entry_future(L(1), E(entry), 0.2))
            with pytest.raises(errors.BookieUnavailableError, match="timed out"):
                await asyncio.wait_for(answer, 10)
            assert rpc.connected
        await rpc.close()
    silent.close()
    await silent.wait_closed()


async def test_connection_loss_fails_every_pending_call_and_the_next_call_reconnects(
    serve: Serve,
) -> None:
    accepted: list[asyncio.StreamWriter] = []
    got_requests = asyncio.Event()

    async def hang_up_after_reading(reader: asyncio.StreamReader,
                                    writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read(wire.HEADER_SIZE)
        got_requests.set()

    flaky = await asyncio.start_server(hang_up_after_reading, "127.0.0.1", 0)
    port = flaky.sockets[0].getsockname()[1]
    rpc = client.BookieClient(types.BookieId(f"127.0.0.1:{port}"))
    calls = [asyncio.ensure_future(rpc.read_entry(L(1), E(i))) for i in range(5)]
    await asyncio.wait_for(got_requests.wait(), 30)
    accepted[0].close()
    for call in calls:
        with pytest.raises(errors.BookieUnavailableError) as raised:
            await asyncio.wait_for(call, 30)
        assert raised.value.__cause__ is not None
    # The next call opens a new connection.
    got_requests.clear()
    again = asyncio.ensure_future(rpc.read_entry(L(1), E(0)))
    await asyncio.wait_for(got_requests.wait(), 30)
    assert len(accepted) == 2
    accepted[1].close()
    with pytest.raises(errors.BookieUnavailableError):
        await asyncio.wait_for(again, 30)
    await rpc.close()
    flaky.close()
    await flaky.wait_closed()


async def test_pool_hands_out_one_client_per_bookie(serve: Serve) -> None:
    bookie = await serve()
    pool = client.BookieClientPool()
    first = pool.get(bookie.bookie_id)
    assert pool.get(bookie.bookie_id) is first
    await first.add_entry(L(13), E(0), E(-1), b"x", KEY)
    await pool.close()
    with pytest.raises(errors.BookieUnavailableError):
        pool.get(bookie.bookie_id)
    with pytest.raises(errors.BookieUnavailableError):
        await first.read_entry(L(13), E(0))


async def test_client_refuses_calls_past_its_pending_limit(serve: Serve) -> None:
    bookie = await serve(
        client_settings=client.ClientSettings(pending_requests_max=3),
        journalMaxGroupWaitMSec=500, journalSyncData=True,
    )
    results = await asyncio.gather(
        *(bookie.client.add_entry(L(14), E(i), E(i - 1), b"x", KEY) for i in range(6)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, errors.TooManyRequestsError) for r in results) == 3


async def test_stop_finishes_in_flight_adds_then_refuses_new_ones(serve: Serve) -> None:
    # Every batch waits for company, so the adds are held in flight when stop begins.
    bookie = await serve(journalMaxGroupWaitMSec=300, journalSyncData=True,
                         journalAdaptiveGroupWrites=False)
    adds = [asyncio.ensure_future(bookie.client.add_entry(L(15), E(i), E(i - 1), b"x", KEY))
            for i in range(5)]
    await wait_until(lambda: bookie.server.adds_in_progress == 5)
    await bookie.server.stop(grace_s=30)
    assert await asyncio.gather(*adds) == [None] * 5
    with pytest.raises(errors.BookieUnavailableError):
        await bookie.client.add_entry(L(15), E(5), E(4), b"x", KEY)


async def test_a_bookie_that_stops_reading_cannot_grow_the_client_memory() -> None:
    stalled = asyncio.Event()

    async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await stalled.wait()  # like a SIGSTOPped bookie: the connection is open, nobody reads
        writer.close()

    server_ = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = server_.sockets[0].getsockname()[1]
    limit = 1024 * 1024
    rpc = client.BookieClient(
        types.BookieId(f"127.0.0.1:{port}"),
        client.ClientSettings(write_buffer_max_bytes=limit, add_timeout_s=60),
    )
    entry = bytes(256 * 1024)
    calls: list[asyncio.Future[None]] = []

    def refused() -> list[BaseException]:
        return [c.exception() for c in calls  # type: ignore[misc]
                if c.done() and isinstance(c.exception(), errors.TooManyRequestsError)]

    for i in range(4000):  # far more than kernel buffers and the limit hold
        calls.append(asyncio.ensure_future(rpc.add_entry(L(1), E(i), E(i - 1), entry, KEY)))
        await asyncio.sleep(0)  # let the call run up to its send
        if refused():
            break
    assert refused(), "calls kept being accepted by a bookie that reads nothing"
    assert "not reading" in str(refused()[0])
    await rpc.close()
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(o, errors.TooManyRequestsError | errors.BookieUnavailableError)
               for o in outcomes)
    stalled.set()
    server_.close()
    await server_.wait_closed()
