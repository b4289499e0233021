"""The ledger client's side of the bookie protocol: BookieRpc over TCP, and a pool of them.

One connection per bookie, opened on first use and again on the first use
after it broke. Requests are pipelined: each gets a request id and a future
in the connection's pending map, and the connection's single reader (its
asyncio.Protocol) completes futures as responses arrive, in any order.
Requests made in one event-loop turn leave in one socket write.

Every call has a timeout (BookieUnavailableError when it passes; a late
response is dropped). A bookie that stops reading (a stopped process) makes
calls fail with TooManyRequestsError once the connection's unsent bytes pass
write_buffer_max_bytes, so it cannot grow the client's memory. When the connection is lost every pending call fails
at once with BookieUnavailableError chained to the cause. The pending map has
a named limit: past it, calls fail with TooManyRequestsError instead of
queueing without bound.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import ssl
import typing
from collections.abc import Callable

from pulsar_bookie import errors, types
from pulsar_bookie.client import bookie_rpc
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.net import wire
from pulsar_bookie.storage import api as storage_api

log = logging.getLogger(__name__)

#: Largest request id before it wraps (ids only need to be unique among pending calls).
REQUEST_ID_MAX = 2**63 - 1


@dataclasses.dataclass(frozen=True)
class ClientSettings:
    """Timeouts and limits of connections to bookies (BookKeeper: addEntryTimeoutSec,
    readEntryTimeoutSec, connectTimeoutMillis)."""

    connect_timeout_s: float = 5.0
    add_timeout_s: float = 10.0
    read_timeout_s: float = 10.0
    #: Requests in flight on one connection; more fail with TooManyRequestsError.
    pending_requests_max: int = 50_000
    #: Unsent bytes of one connection (a bookie that stopped reading, e.g. SIGSTOPped) above
    #: which calls fail with TooManyRequestsError, so a stuck bookie cannot grow our memory.
    write_buffer_max_bytes: int = 64 * 1024 * 1024
    max_frame_bytes: int = wire.MAX_FRAME_BYTES_DEFAULT

    def validate(self) -> None:
        for field in dataclasses.fields(self):
            if getattr(self, field.name) <= 0:
                raise ValueError(f"{field.name} must be positive")


def address_of(bookie_id: types.BookieId) -> tuple[str, int]:
    """host and port of a "host:port" bookie id (IPv6 hosts may be bracketed)."""
    host, sep, port = bookie_id.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bookie id {bookie_id!r} is not host:port")
    return host.strip("[]"), int(port)


T = typing.TypeVar("T")


def _added(_response: wire.Response) -> None:
    return None


def _stored(ledger_id: types.LedgerId, entry_id: types.EntryId,
            response: wire.Response) -> storage_api.StoredEntry:
    return storage_api.StoredEntry(
        ledger_id, entry_id, types.EntryId(response.last_add_confirmed), response.body)


#: How often a connection looks for timed-out calls (a call fails at most this much late).
TIMEOUT_CHECK_INTERVAL_S = 0.05


class _Connection(asyncio.Protocol):
    """One TCP connection to a bookie: the pending map and the one reader of responses."""

    def __init__(self, bookie_id: types.BookieId, settings: ClientSettings) -> None:
        self.bookie_id = bookie_id
        self._settings = settings
        self._loop = asyncio.get_running_loop()
        self._decoder = wire.ResponseDecoder(settings.max_frame_bytes)
        self._transport: asyncio.Transport | None = None
        self._pending: dict[int, asyncio.Future[wire.Response]] = {}
        # Calls with the same timeout expire in the order they were made, so one FIFO per
        # distinct timeout keeps deadlines sorted without a timer per call.
        self._deadlines: dict[float, collections.deque[tuple[float, int, wire.Op]]] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._next_id = 0
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._writable = True
        self.closed = False

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = typing.cast(asyncio.Transport, transport)
        high = self._settings.write_buffer_max_bytes
        self._transport.set_write_buffer_limits(high, high // 4)

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True

    def call(
        self,
        op: wire.Op,
        flags: int,
        ledger_id: int,
        entry_id: int,
        arg: int,
        master_key: bytes,
        payload: bytes,
        timeout_s: float,
    ) -> asyncio.Future[wire.Response]:
        if self.closed:
            raise errors.BookieUnavailableError(f"connection to {self.bookie_id} is closed")
        if len(self._pending) >= self._settings.pending_requests_max:
            raise errors.TooManyRequestsError(
                f"{len(self._pending)} requests pending to {self.bookie_id} (limit reached)"
            )
        if not self._writable or self._out_bytes > self._settings.write_buffer_max_bytes:
            raise errors.TooManyRequestsError(
                f"bookie {self.bookie_id} is not reading: more than "
                f"{self._settings.write_buffer_max_bytes} bytes unsent"
            )
        request_id = self._next_id
        self._next_id = 0 if request_id >= REQUEST_ID_MAX else request_id + 1
        future: asyncio.Future[wire.Response] = self._loop.create_future()
        self._pending[request_id] = future
        queue = self._deadlines.get(timeout_s)
        if queue is None:
            queue = self._deadlines[timeout_s] = collections.deque()
        queue.append((self._loop.time() + timeout_s, request_id, op))
        if self._sweeper is None:
            self._sweeper = self._loop.call_later(TIMEOUT_CHECK_INTERVAL_S, self._sweep)
        header = wire.encode_request_header(
            op, flags, request_id, ledger_id, entry_id, arg, master_key, len(payload)
        )
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(header)
        if payload:
            self._out.append(payload)
            self._out_bytes += len(payload)
        return future

    def _flush(self) -> None:
        out, self._out = self._out, []
        self._out_bytes = 0
        if self._transport is not None and out and not self.closed:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _sweep(self) -> None:
        """Fail the calls whose deadline passed; runs every interval while calls are pending."""
        self._sweeper = None
        now = self._loop.time()
        pending = self._pending
        for timeout_s, queue in list(self._deadlines.items()):
            while queue and (queue[0][0] <= now or queue[0][1] not in pending):
                _, request_id, op = queue.popleft()
                future = pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_exception(
                        errors.BookieUnavailableError(
                            f"{op.name} to bookie {self.bookie_id} timed out after {timeout_s}s"
                        )
                    )
            if not queue:
                del self._deadlines[timeout_s]
        if self._deadlines and not self.closed:
            self._sweeper = self._loop.call_later(TIMEOUT_CHECK_INTERVAL_S, self._sweep)

    def data_received(self, data: bytes) -> None:
        try:
            responses = self._decoder.feed(data)
        except net_errors.MalformedFrameError as exc:
            log.warning("closing connection to bookie %s: %s", self.bookie_id, exc)
            self._fail_all(exc)
            if self._transport is not None:
                self._transport.abort()
            return
        pending = self._pending
        for response in responses:
            future = pending.pop(response.request_id, None)
            if future is not None and not future.done():  # else: timed out or cancelled
                future.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail_all(exc or ConnectionResetError(f"bookie {self.bookie_id} closed the connection"))
        self._transport = None

    def _fail_all(self, cause: BaseException) -> None:
        self.closed = True
        self._out = []
        pending, self._pending = self._pending, {}
        self._deadlines = {}
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for future in pending.values():
            if not future.done():
                error = errors.BookieUnavailableError(
                    f"connection to bookie {self.bookie_id} lost: {cause}"
                )
                error.__cause__ = cause
                future.set_exception(error)

    def close(self) -> None:
        self._flush()
        if self._transport is not None:
            self._transport.close()
        self._fail_all(ConnectionAbortedError("connection closed by the client"))


class BookieClient(bookie_rpc.BookieRpc):
    """BookieRpc over TCP to one bookie; cheap to create (connects on first call)."""

    def __init__(
        self,
        bookie_id: types.BookieId,
        settings: ClientSettings | None = None,
        *,
        address: tuple[str, int] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._bookie_id = bookie_id
        #: TLS to the bookie (the broker's bookkeeperTLS* settings), None for plain TCP.
        self._ssl_context = ssl_context
        self.settings = settings or ClientSettings()
        self.settings.validate()
        self._address = address or address_of(bookie_id)
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self._closed = False

    @property
    def bookie_id(self) -> types.BookieId:
        return self._bookie_id

    @property
    def connected(self) -> bool:
        return self._connection is not None and not self._connection.closed

    async def _connect(self) -> _Connection:
        """The open connection, or one attempt to open it that every concurrent caller shares
        (so calls to a dead bookie fail together after one connect timeout, not one each)."""
        if self._closed:
            raise errors.BookieUnavailableError(f"client of bookie {self._bookie_id} is closed")
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open())
        attempt = self._connecting
        try:
            return await asyncio.shield(attempt)
        finally:
            if attempt.done() and self._connecting is attempt:
                self._connecting = None

    async def _open(self) -> _Connection:
        host, port = self._address
        loop = asyncio.get_running_loop()
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self._bookie_id, self.settings), host, port,
                    ssl=self._ssl_context,
                    server_hostname=None if self._ssl_context is None else host,
                ),
                self.settings.connect_timeout_s,
            )
        except (OSError, TimeoutError) as exc:
            raise errors.BookieUnavailableError(
                f"cannot connect to bookie {self._bookie_id}: {exc or 'timed out'}"
            ) from exc
        if self._closed:
            protocol.close()
            raise errors.BookieUnavailableError(f"client of bookie {self._bookie_id} is closed")
        self._connection = protocol
        return protocol

    async def _call(
        self,
        op: wire.Op,
        ledger_id: int,
        entry_id: int,
        *,
        flags: int = 0,
        arg: int = -1,
        master_key: bytes = b"",
        payload: bytes = b"",
        timeout_s: float,
    ) -> wire.Response:
        connection = self._connection
        if connection is None or connection.closed:
            connection = await self._connect()
        response = await connection.call(
            op, flags, ledger_id, entry_id, arg, master_key, payload, timeout_s
        )
        if response.status is not wire.Status.OK:
            raise self._error(response)
        return response

    def _error(self, response: wire.Response) -> errors.BookieError:
        return wire.error_for(
            response.status,
            f"bookie {self._bookie_id}: {response.body.decode('utf-8', 'replace')}",
        )

    async def add_entry(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
        *,
        recovery: bool = False,
    ) -> None:
        await self._call(
            wire.Op.ADD, ledger_id, entry_id, flags=wire.FLAG_RECOVERY if recovery else 0,
            arg=last_add_confirmed, master_key=master_key, payload=payload,
            timeout_s=self.settings.add_timeout_s)

    def add_entry_future(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
        timeout_s: float,
    ) -> asyncio.Future[None]:
        return self._call_future(wire.Op.ADD, ledger_id, entry_id, last_add_confirmed,
                                 master_key, payload, timeout_s, _added)

    async def read_entry(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        *,
        fence: bool = False,
        master_key: bytes = b"",
    ) -> storage_api.StoredEntry:
        response = await self._call(
            wire.Op.READ, ledger_id, entry_id,
            flags=wire.FLAG_FENCE if fence else 0, master_key=master_key,
            timeout_s=self.settings.read_timeout_s,
        )
        return _stored(ledger_id, entry_id, response)

    def read_entry_future(
        self, ledger_id: types.LedgerId, entry_id: types.EntryId, timeout_s: float
    ) -> asyncio.Future[storage_api.StoredEntry]:
        return self._call_future(wire.Op.READ, ledger_id, entry_id, -1, b"", b"", timeout_s,
                                 functools.partial(_stored, ledger_id, entry_id))

    def _call_future(
        self,
        op: wire.Op,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        arg: int,
        master_key: bytes,
        payload: bytes,
        timeout_s: float,
        value: Callable[[wire.Response], T],
    ) -> asyncio.Future[T]:
        """The replicated client's hot path: value(response) as a future. On the open
        connection the request leaves at once, the connection's reader completes the future
        and its deadline sweep keeps timeout_s, so a call costs no task and no timer of its
        own. Before the connection is open the call connects in a task, connecting and the
        call together within timeout_s."""
        connection = self._connection
        if connection is None or connection.closed:
            return asyncio.ensure_future(self._connect_and_call(
                op, ledger_id, entry_id, arg, master_key, payload, timeout_s, value))
        response = connection.call(op, 0, ledger_id, entry_id, arg, master_key, payload,
                                   timeout_s)
        result: asyncio.Future[T] = response.get_loop().create_future()
        response.add_done_callback(functools.partial(self._on_response, result, value))
        return result

    async def _connect_and_call(
        self,
        op: wire.Op,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        arg: int,
        master_key: bytes,
        payload: bytes,
        timeout_s: float,
        value: Callable[[wire.Response], T],
    ) -> T:
        try:
            async with asyncio.timeout(timeout_s):
                response = await self._call(op, ledger_id, entry_id, arg=arg,
                                            master_key=master_key, payload=payload,
                                            timeout_s=timeout_s)
        except TimeoutError as exc:
            raise errors.BookieUnavailableError(
                f"{op.name} to bookie {self._bookie_id} timed out after {timeout_s}s") from exc
        return value(response)

    def _on_response(self, result: asyncio.Future[T], value: Callable[[wire.Response], T],
                     response: asyncio.Future[wire.Response]) -> None:
        """Complete result from a call's response: value(response) when the bookie said OK."""
        if result.done():  # the caller cancelled it
            return
        if response.cancelled():
            result.cancel()
            return
        failure = response.exception()
        if failure is not None:
            result.set_exception(failure)
        elif (reply := response.result()).status is not wire.Status.OK:
            result.set_exception(self._error(reply))
        else:
            result.set_result(value(reply))

    async def read_last_add_confirmed(self, ledger_id: types.LedgerId) -> types.EntryId:
        response = await self._call(
            wire.Op.READ_LAC, ledger_id, -1, timeout_s=self.settings.read_timeout_s
        )
        return types.EntryId(response.last_add_confirmed)

    async def wait_last_add_confirmed(
        self, ledger_id: types.LedgerId, previous: types.EntryId, timeout_ms: int
    ) -> types.EntryId:
        response = await self._call(
            wire.Op.WAIT_LAC, ledger_id, previous, arg=timeout_ms,
            timeout_s=timeout_ms / 1000.0 + self.settings.read_timeout_s,
        )
        return types.EntryId(response.last_add_confirmed)

    async def fence_ledger(self, ledger_id: types.LedgerId, master_key: bytes) -> types.EntryId:
        response = await self._call(
            wire.Op.FENCE, ledger_id, -1, master_key=master_key,
            timeout_s=self.settings.read_timeout_s,
        )
        return types.EntryId(response.last_add_confirmed)

    async def close(self) -> None:
        self._closed = True
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class BookieClientPool(bookie_rpc.BookieRpcPool):
    """BookieClients by bookie id, created on first `get` and kept until `close`.

    address_resolver maps a bookie id to (host, port); by default the id is
    parsed as host:port (see registration.BookieInfo for bookies that
    register another address).
    """

    def __init__(
        self,
        settings: ClientSettings | None = None,
        *,
        address_resolver: Callable[[types.BookieId], tuple[str, int]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.ssl_context = ssl_context
        self.settings = settings or ClientSettings()
        self.settings.validate()
        self._resolve = address_resolver or address_of
        self._clients: dict[types.BookieId, BookieClient] = {}
        self._closed = False

    def get(self, bookie_id: types.BookieId) -> BookieClient:
        if self._closed:
            raise errors.BookieUnavailableError("the bookie client pool is closed")
        client = self._clients.get(bookie_id)
        if client is None:
            client = self._clients[bookie_id] = BookieClient(
                bookie_id, self.settings, address=self._resolve(bookie_id),
                ssl_context=self.ssl_context,
            )
        return client

    async def close(self) -> None:
        self._closed = True
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.close()
