"""The bookie's TCP server: decodes request frames, runs them on the storage, answers by request id.

Each connection is an asyncio.Protocol: received bytes go through one
RequestDecoder; every request becomes a task on the storage, so many requests
of one connection are in flight at once and their responses go out in
completion order, matched by request id. Responses produced in one event-loop
turn leave in one socket write. A connection whose client does not read its
responses stops being read (transport write-buffer water marks), so a slow
client cannot make the bookie buffer without bound.

Limits: in-progress adds, in-progress reads (reads, LAC reads, fences) and
long-poll LAC waiters are each bounded; a request over its limit is answered
TOO_MANY_REQUESTS at once and never queued. In read-only mode adds are
answered READ_ONLY; reads, fences and recovery reads keep working.

A malformed frame closes only the connection it came on (and logs one line).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import ssl
import time
import typing
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from pulsar_bookie import errors, types
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.net import wire
from pulsar_bookie.storage import api as storage_api

log = logging.getLogger(__name__)

#: Longest long poll a client may ask for.
LONG_POLL_TIMEOUT_MAX_MS = 120_000
#: Unsent response bytes of one connection above which it is no longer read...
WRITE_BUFFER_HIGH_BYTES = 8 * 1024 * 1024
#: ... and below which reading resumes.
WRITE_BUFFER_LOW_BYTES = 2 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    adds_in_progress_max: int = 10_000
    reads_in_progress_max: int = 10_000
    lac_waiters_max: int = 10_000
    max_frame_bytes: int = wire.MAX_FRAME_BYTES_DEFAULT

    def validate(self) -> None:
        for field in dataclasses.fields(self):
            if getattr(self, field.name) <= 0:
                raise ValueError(f"{field.name} must be positive")


class RequestObserver(Protocol):
    """Told about each finished request (the metrics adapter implements it)."""

    def on_add(self, seconds: float, ok: bool) -> None: ...

    def on_read(self, seconds: float, ok: bool) -> None: ...


class _NoObserver:
    def on_add(self, seconds: float, ok: bool) -> None:
        pass

    def on_read(self, seconds: float, ok: bool) -> None:
        pass


class _Connection(asyncio.Protocol):
    """One client connection: its decoder, its batched writes, and nothing else."""

    def __init__(self, server: BookieServer) -> None:
        self._server = server
        self._decoder = wire.RequestDecoder(server.settings.max_frame_bytes)
        self._transport: asyncio.Transport | None = None
        self._out: list[bytes] = []
        self._loop = asyncio.get_running_loop()
        self.peer = "?"

    @property
    def open(self) -> bool:
        return self._transport is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport = typing.cast(asyncio.Transport, transport)
        transport.set_write_buffer_limits(WRITE_BUFFER_HIGH_BYTES, WRITE_BUFFER_LOW_BYTES)
        self.peer = str(transport.get_extra_info("peername"))
        self._server._connections.add(self)

    def data_received(self, data: bytes) -> None:
        try:
            requests = self._decoder.feed(data)
        except net_errors.MalformedFrameError as exc:
            log.warning("closing bookie connection from %s: %s", self.peer, exc)
            self.abort()
            return
        dispatch = self._server._dispatch
        for request in requests:
            dispatch(self, request)

    def send(self, frame: bytes) -> None:
        if self._transport is None:
            return
        if not self._out:
            self._loop.call_soon(self._flush)
        self._out.append(frame)

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self._transport is not None and out:
            self._transport.write(out[0] if len(out) == 1 else b"".join(out))

    def pause_writing(self) -> None:
        if self._transport is not None:
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        if self._transport is not None:
            self._transport.resume_reading()

    def close(self) -> None:
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()
        self._transport = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._out = []
        self._server._connections.discard(self)


class BookieServer:
    """Serves one LedgerStorage on a TCP port. `await start(host, port)`, later `await stop()`."""

    def __init__(
        self,
        storage: storage_api.LedgerStorage,
        settings: ServerSettings | None = None,
        *,
        observer: RequestObserver | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.settings = settings or ServerSettings()
        self.settings.validate()
        self.storage = storage
        #: Set by the disk monitor: adds are refused while True.
        self.read_only = False
        self._observer: RequestObserver = observer or _NoObserver()
        self._clock = clock
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiters: dict[int, list[tuple[int, asyncio.Future[None]]]] = {}
        self._waiter_count = 0
        self.adds_in_progress = 0
        self.reads_in_progress = 0
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()
        #: Adds made with the storage's add_entry_future (no task): stop waits for them too.
        self._adds_without_task = 0

    @property
    def storage(self) -> storage_api.LedgerStorage:
        return self._storage

    @storage.setter
    def storage(self, storage: storage_api.LedgerStorage) -> None:
        """The storage served (the bookie service replaces it on start), with the calls that
        let an add or a cached read be answered without a task, where it has them."""
        self._storage = storage
        self._add_entry_future: Callable[..., asyncio.Future[object]] | None = getattr(
            storage, "add_entry_future", None)
        self._read_entry_cached: Callable[..., storage_api.StoredEntry | None] | None = (
            getattr(storage, "read_entry_cached", None))

    # ----- life cycle -----

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> None:
        """Listen on host:port; over TLS with ssl_context."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), host, port, reuse_address=True, ssl=ssl_context
        )

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def serving(self) -> bool:
        return self._server is not None and not self._draining

    @property
    def lac_waiters(self) -> int:
        return self._waiter_count

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop accepting, let in-flight adds and reads finish (up to grace_s), answer
        long polls with the current LAC, then close every connection."""
        self._draining = True
        if self._server is not None:
            self._server.close()
        for waiters in self._waiters.values():
            for _, future in waiters:
                if not future.done():
                    future.set_result(None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace_s)
        for connection in list(self._connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    # ----- dispatch -----

    def _dispatch(self, connection: _Connection, request: wire.Request) -> None:
        op = request.op
        if self._draining:
            self._refuse(connection, request, wire.Status.UNAVAILABLE, "bookie is shutting down")
            return
        if op is wire.Op.ADD:
            if self.read_only:
                self._refuse(connection, request, wire.Status.READ_ONLY, "bookie is read-only")
                return
            if self.adds_in_progress >= self.settings.adds_in_progress_max:
                self._refuse(
                    connection, request, wire.Status.TOO_MANY_REQUESTS,
                    f"{self.adds_in_progress} adds in progress (limit reached)",
                )
                return
            self.adds_in_progress += 1
            if self._add_entry_future is None or request.flags & wire.FLAG_RECOVERY:
                self._spawn(self._add(connection, request))
            else:
                self._add_without_task(connection, request, self._add_entry_future)
        elif op is wire.Op.WAIT_LAC:
            if self._waiter_count >= self.settings.lac_waiters_max:
                self._refuse(
                    connection, request, wire.Status.TOO_MANY_REQUESTS,
                    f"{self._waiter_count} long polls waiting (limit reached)",
                )
                return
            self._waiter_count += 1
            self._spawn(self._wait_lac(connection, request))
        else:
            if self.reads_in_progress >= self.settings.reads_in_progress_max:
                self._refuse(
                    connection, request, wire.Status.TOO_MANY_REQUESTS,
                    f"{self.reads_in_progress} reads in progress (limit reached)",
                )
                return
            if op is wire.Op.READ and not request.flags & wire.FLAG_FENCE \
                    and self._read_cached(connection, request):
                return
            self.reads_in_progress += 1
            self._spawn(self._read(connection, request))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._idle.clear()
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not self._tasks and not self._adds_without_task:
            self._idle.set()

    @staticmethod
    def _refuse(
        connection: _Connection, request: wire.Request, status: wire.Status, message: str
    ) -> None:
        connection.send(wire.encode_error(request, status, message))

    def _fail(self, connection: _Connection, request: wire.Request, exc: BaseException) -> None:
        status = wire.status_for(exc)
        if status is wire.Status.SERVER_ERROR:
            log.error("request %s on ledger %d failed", request.op.name, request.ledger_id,
                      exc_info=exc)
        connection.send(wire.encode_error(request, status, str(exc) or type(exc).__name__))

    # ----- operations -----

    async def _add(self, connection: _Connection, request: wire.Request) -> None:
        started = self._clock()
        failure: BaseException | None = None
        try:
            await self.storage.add_entry(
                types.LedgerId(request.ledger_id),
                types.EntryId(request.entry_id),
                types.EntryId(request.arg),
                request.payload,
                request.master_key,
                recovery=bool(request.flags & wire.FLAG_RECOVERY),
            )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            failure = exc
        self._added(connection, request, started, failure)

    def _add_without_task(self, connection: _Connection, request: wire.Request,
                          add_entry_future: Callable[..., asyncio.Future[object]]) -> None:
        """An add as the storage's future and a callback: no task or coroutine per add."""
        started = self._clock()
        try:
            stored = add_entry_future(
                types.LedgerId(request.ledger_id), types.EntryId(request.entry_id),
                types.EntryId(request.arg), request.payload, request.master_key)
        except Exception as exc:  # noqa: BLE001 - refused at once: the same answer
            self._added(connection, request, started, exc)
            return
        self._adds_without_task += 1
        self._idle.clear()
        stored.add_done_callback(functools.partial(self._stored, connection, request, started))

    def _stored(self, connection: _Connection, request: wire.Request, started: float,
                stored: asyncio.Future[object]) -> None:
        self._adds_without_task -= 1
        failure = (errors.BookieError("add cancelled") if stored.cancelled()
                   else stored.exception())
        self._added(connection, request, started, failure)
        if not self._tasks and not self._adds_without_task:
            self._idle.set()

    def _added(self, connection: _Connection, request: wire.Request, started: float,
               failure: BaseException | None) -> None:
        self.adds_in_progress -= 1
        self._observer.on_add(self._clock() - started, failure is None)
        if failure is not None:
            self._fail(connection, request, failure)
            return
        connection.send(
            wire.encode_response_header(
                wire.Op.ADD, wire.Status.OK, request.request_id, request.ledger_id,
                request.entry_id, request.arg,
            )
        )
        if request.ledger_id in self._waiters:
            self._spawn(self._wake_waiters(request.ledger_id))

    def _read_cached(self, connection: _Connection, request: wire.Request) -> bool:
        """Answer a READ at once, without a task, when the storage's caches hold the entry
        (or the ledger is unknown); False when it has to be read from the entry logs."""
        read_entry_cached = self._read_entry_cached
        if read_entry_cached is None:
            return False
        started = self._clock()
        try:
            entry: storage_api.StoredEntry | None = read_entry_cached(
                types.LedgerId(request.ledger_id), types.EntryId(request.entry_id))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._observer.on_read(self._clock() - started, False)
            self._fail(connection, request, exc)
            return True
        if entry is None:
            return False
        self._observer.on_read(self._clock() - started, True)
        connection.send(self._ok(request, entry.last_add_confirmed, len(entry.payload))
                        + entry.payload)
        return True

    async def _read(self, connection: _Connection, request: wire.Request) -> None:
        started = self._clock()
        ok = False
        try:
            frame = await self._run_read(request)
            ok = True
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._fail(connection, request, exc)
        finally:
            self.reads_in_progress -= 1
            self._observer.on_read(self._clock() - started, ok)
        if ok:
            connection.send(frame)

    async def _run_read(self, request: wire.Request) -> bytes:
        ledger_id = types.LedgerId(request.ledger_id)
        storage = self.storage
        if request.op is wire.Op.READ:
            if request.flags & wire.FLAG_FENCE:
                await storage.fence_ledger(ledger_id, request.master_key)
            entry = await storage.read_entry(ledger_id, types.EntryId(request.entry_id))
            return self._ok(request, entry.last_add_confirmed, len(entry.payload)) + entry.payload
        if request.op is wire.Op.READ_LAC:
            return self._ok(request, await storage.read_last_add_confirmed(ledger_id))
        if request.op is wire.Op.FENCE:
            return self._ok(request, await storage.fence_ledger(ledger_id, request.master_key))
        raise net_errors.BadRequestError(f"unexpected op {request.op.name}")

    @staticmethod
    def _ok(request: wire.Request, lac: int, body_length: int = 0) -> bytes:
        return wire.encode_response_header(
            request.op, wire.Status.OK, request.request_id, request.ledger_id,
            request.entry_id, lac, body_length,
        )

    # ----- long poll of the LAC -----

    async def _current_lac(self, ledger_id: int) -> int | None:
        try:
            return await self.storage.read_last_add_confirmed(types.LedgerId(ledger_id))
        except errors.NoSuchLedgerError:
            return None

    async def _wait_lac(self, connection: _Connection, request: wire.Request) -> None:
        """Answer once this bookie's LAC for the ledger passes the reader's, or at the timeout."""
        try:
            lac = await self._current_lac(request.ledger_id)
            previous = request.entry_id
            if (lac is None or lac <= previous) and not self._draining:
                timeout_s = min(max(request.arg, 0), LONG_POLL_TIMEOUT_MAX_MS) / 1000.0
                future = asyncio.get_running_loop().create_future()
                waiters = self._waiters.setdefault(request.ledger_id, [])
                waiters.append((previous, future))
                try:
                    await asyncio.wait_for(future, timeout_s)
                except TimeoutError:
                    pass
                finally:
                    self._forget_waiter(request.ledger_id, future)
                lac = await self._current_lac(request.ledger_id)
            if lac is None:
                raise errors.NoSuchLedgerError(f"ledger {request.ledger_id} is not stored here")
            connection.send(self._ok(request, lac))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a response
            self._fail(connection, request, exc)
        finally:
            self._waiter_count -= 1

    def _forget_waiter(self, ledger_id: int, future: asyncio.Future[None]) -> None:
        waiters = self._waiters.get(ledger_id)
        if waiters is None:
            return
        waiters[:] = [w for w in waiters if w[1] is not future]
        if not waiters:
            del self._waiters[ledger_id]

    async def _wake_waiters(self, ledger_id: int) -> None:
        lac = await self._current_lac(ledger_id)
        if lac is None:
            return
        for previous, future in self._waiters.get(ledger_id, ()):
            if lac > previous and not future.done():
                future.set_result(None)
