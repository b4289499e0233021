"""One client connection to the proxy, and the relay to a broker it may turn into.

The first frame must be CONNECT. Without `proxy_to_broker_url` the connection
is a lookup connection: the proxy answers CONNECTED itself and then handles
the lookup requests (see lookups.py), pings and pongs; anything else closes
it. With `proxy_to_broker_url` (the address a lookup answered with) the
proxy checks the target, connects to that broker, hands it the client's
CONNECT and from then on copies bytes both ways without decoding them: the
broker's CONNECTED, every command and every payload reach the client as the
broker wrote them. Either side closing closes the other; reading from one
side pauses while the other side's outgoing buffer is over its high-water mark.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import typing
from typing import Any

from pulsar_common.auth.errors import AuthenticationError
from pulsar_common.wire import commands as replies
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_proxy import broker_client, errors, identity, lookups

if typing.TYPE_CHECKING:
    from pulsar_proxy.service import ProxyService

log = logging.getLogger(__name__)
T = pb.BaseCommand

SERVER_VERSION = "pulsar-py-proxy 0.1.0"
PROTOCOL_VERSION = 20
#: Outgoing bytes buffered for one side before reading from the other side pauses.
RELAY_HIGH_WATER_BYTES = 4 * 1024 * 1024


class State(enum.Enum):
    AWAITING_CONNECT = "awaiting-connect"
    LOOKUP = "lookup"
    CONNECTING_TO_BROKER = "connecting-to-broker"
    RELAYING = "relaying"
    CLOSED = "closed"


class _Side(asyncio.Protocol):
    """Flow control shared by both ends of a relay: pause the peer while we cannot write."""

    transport: asyncio.Transport | None = None
    peer: _Side | None = None

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()


class BrokerSide(_Side):
    """The proxy's connection to the broker a client is relayed to."""

    def __init__(self, client: ProxyConnection) -> None:
        self.peer = client
        self._stats = client.service.stats

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=RELAY_HIGH_WATER_BYTES)

    def data_received(self, data: bytes) -> None:
        self._stats.binary_bytes += len(data)
        assert self.peer is not None
        if self.peer.transport is not None:
            self.peer.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if self.peer is not None:
            typing.cast(ProxyConnection, self.peer).close()


class ProxyConnection(_Side):
    def __init__(self, service: ProxyService) -> None:
        self.service = service
        self.conf = service.conf
        self.stats = service.stats
        self.state = State.AWAITING_CONNECT
        self.remote_address = "?"
        self.remote_host = ""
        self._decoder = frame.FrameDecoder(self.conf.max_message_size + frame.FRAME_HEADER_ROOM)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._keepalive: asyncio.TimerHandle | None = None
        self._seen_since_ping = True
        self._admitted = False
        self.client: identity.ClientIdentity | None = None
        #: This client's own broker connections for its lookups, when they must carry its
        #: identity (None: the proxy's shared ones).
        self._pool: broker_client.BrokerClientPool | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote_host = str(peer[0]) if peer else ""
        self.remote_address = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.transport.set_write_buffer_limits(high=RELAY_HIGH_WATER_BYTES)
        if not self.service.admit(self):
            log.warning("refusing connection from %s: connection limit reached",
                        self.remote_address)
            self.state = State.CLOSED
            self.transport.abort()
            return
        self._admitted = True
        self._schedule_keepalive()

    def data_received(self, data: bytes) -> None:
        if self.state is State.RELAYING:
            self.stats.binary_bytes += len(data)
            assert self.peer is not None and self.peer.transport is not None
            self.peer.transport.write(data)
            return
        self._seen_since_ping = True
        try:
            frames = self._decoder.feed(data)
        except wire_errors.WireError as exc:
            log.warning("closing connection from %s: %s", self.remote_address, exc)
            self.close()
            return
        for received in frames:
            if self.state is State.CLOSED:
                return
            self._handle(received)

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = State.CLOSED
        self.transport = None
        if self._keepalive is not None:
            self._keepalive.cancel()
        for task in self._tasks:
            task.cancel()
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()
        if self._admitted:
            self._admitted = False
            self.service.release(self)
        if self._pool is not None:
            pool, self._pool = self._pool, None
            asyncio.get_running_loop().create_task(pool.close())

    def close(self) -> None:
        self.state = State.CLOSED
        if self.transport is not None:
            self.transport.close()

    # Frames before relaying

    def _handle(self, received: frame.Frame) -> None:
        command = received.command
        if self.state is State.AWAITING_CONNECT:
            if command.type != T.CONNECT:
                self._refuse(f"{T.Type.Name(command.type)} before CONNECT")
                return
            self._connect(command.connect)
        elif self.state is State.LOOKUP:
            self._lookup_command(command)
        else:
            # The client must wait for CONNECTED before it sends anything else.
            self._refuse(f"{T.Type.Name(command.type)} before the broker's CONNECTED")

    def _refuse(self, why: str) -> None:
        log.warning("closing connection from %s: %s", self.remote_address, why)
        self.close()

    def _connect(self, connect: pb.CommandConnect) -> None:
        assert self.transport is not None
        try:
            self.client = self.service.identity.authenticate(
                connect, self.transport.get_extra_info("ssl_object"))
        except AuthenticationError as exc:
            log.warning("closing connection from %s: %s", self.remote_address, exc)
            self._write(frame.encode_command(replies.error(
                0, pb.AuthenticationError, f"Unable to authenticate: {exc}")))
            self.close()
            return
        if not connect.HasField("proxy_to_broker_url"):
            broker_connect = self.service.identity.broker_connect(connect, self.client)
            if not self.service.identity.shares_pool(broker_connect):
                self._pool = self.service.broker_pool(broker_connect)
            self.state = State.LOOKUP
            self._write(frame.encode_command(replies.connected(
                SERVER_VERSION, min(connect.protocol_version, PROTOCOL_VERSION),
                max_message_size=self.conf.max_message_size)))
            return
        if self._decoder.buffered_bytes:
            self._refuse("bytes after CONNECT before the broker's CONNECTED")
            return
        self.state = State.CONNECTING_TO_BROKER
        self._spawn(self._connect_to_broker(connect))

    async def _connect_to_broker(self, connect: pb.CommandConnect) -> None:
        target = connect.proxy_to_broker_url
        try:
            host, port = await self.service.discovery.check_target(target)
            loop = asyncio.get_running_loop()
            context = self.service.broker_ssl_context
            transport, broker = await asyncio.wait_for(
                loop.create_connection(lambda: BrokerSide(self), host, port, ssl=context,
                                       server_hostname=None if context is None else host),
                self.conf.lookup_timeout_ms / 1000)
        except (errors.ProxyError, OSError, TimeoutError) as exc:
            code = (pb.AuthorizationError if isinstance(exc, errors.TargetNotAllowedError)
                    else pb.ServiceNotReady)
            log.info("cannot relay %s to %s: %s", self.remote_address, target, exc)
            self._write(frame.encode_command(replies.error(0, code, f"{target}: {exc}")))
            self.close()
            return
        if self.state is not State.CONNECTING_TO_BROKER:  # the client left meanwhile
            transport.close()
            return
        assert self.client is not None
        forwarded = self.service.identity.broker_connect(connect, self.client)
        self.peer = broker
        broker.transport = transport
        broker.transport.write(frame.encode_command(T(type=T.CONNECT, connect=forwarded)))
        self.state = State.RELAYING
        if self._keepalive is not None:  # the client and the broker ping each other now
            self._keepalive.cancel()

    # Lookup connections

    def _lookup_command(self, command: pb.BaseCommand) -> None:
        if command.type == T.PING:
            self._write(replies.PONG_FRAME)
        elif command.type == T.PONG:
            pass
        elif command.type in lookups.HANDLED:
            refusal = self.service.lookups.admit(command)
            if refusal is not None:
                self._write(frame.encode_command(refusal))
            else:
                self._spawn(self._answer(command))
        else:
            self._refuse(f"{T.Type.Name(command.type)} on a lookup connection")

    async def _answer(self, command: pb.BaseCommand) -> None:
        reply = await self.service.lookups.answer(command, self._pool)
        self._write(frame.encode_command(reply))

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _spawn(self, work: typing.Coroutine[Any, Any, None]) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("closing connection from %s after a failed request",
                              self.remote_address)
                self.close()

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # Keepalive of lookup connections

    def _schedule_keepalive(self) -> None:
        interval = self.conf.keep_alive_interval_seconds
        if interval > 0:
            self._keepalive = asyncio.get_running_loop().call_later(interval, self._keepalive_tick)

    def _keepalive_tick(self) -> None:
        if self.state in (State.RELAYING, State.CLOSED):
            return
        if not self._seen_since_ping:
            log.info("closing connection from %s: no answer to keepalive", self.remote_address)
            self.close()
            return
        self._seen_since_ping = False
        if self.state is State.LOOKUP:
            self._write(replies.PING_FRAME)
        self._schedule_keepalive()
