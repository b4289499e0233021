"""One client connection: decodes frames, runs the command state machine, writes replies.

The first frame must be CONNECT. Afterwards commands are handled in arrival
order; those that need I/O (lookups, subscribe, publish) run as tasks while
the connection keeps reading, except that publishing stops reading once
`maxPendingPublishRequestsPerConnection` SENDs are in flight. A frame that
cannot be decoded closes this connection only.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pulsar_common import naming
from pulsar_common.wire import codes, frame
from pulsar_common.wire import commands as replies
from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.security import guard as security_guard
from pulsar_broker.server import auth, commands, handlers
from pulsar_broker.server.handles import ConsumerHandle, ProducerHandle
from pulsar_broker.service.broker_service import BrokerService

log = logging.getLogger(__name__)
T = pb.BaseCommand

#: Bytes queued on a connection's transport above which dispatch to its consumers stops
#: (asyncio's pause_writing); it resumes once the buffer drains below a quarter of it.
OUTBOUND_HIGH_WATER_BYTES = 4 * 1024 * 1024
#: Frames gathered during one loop iteration are written at once past this many bytes, so
#: the transport sees them (and can pause writing) before more are queued.
OUTBOUND_BATCH_BYTES = 256 * 1024


#: Reasons to stop reading a connection's frames.
PAUSED_FOR_PENDING_SENDS = "pending-sends"
PAUSED_FOR_PUBLISH_RATE = "publish-rate"


class ServerConnection(asyncio.BufferedProtocol):
    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self.config = service.config
        #: The broker's connections over all listeners: its limits and counts.
        self._connections = service.connections
        self._admitted_ip: str | None = None
        # The transport reads straight into the decoder's buffer: a SEND's entry is copied
        # once on its way in, from there into the bytes the broker keeps.
        self.decoder = frame.BufferedFrameDecoder(
            self.config.max_message_size + frame.FRAME_HEADER_ROOM)
        self.transport: asyncio.Transport | None = None
        self.remote_address = "?"
        self.protocol_version = 0
        self.connected = False
        self.producers: dict[int, ProducerHandle] = {}
        self.consumers: dict[int, ConsumerHandle] = {}
        #: Producers still being admitted (a WaitForExclusive one waits for its turn there).
        self.waiting_producers: dict[int, asyncio.Task[Any]] = {}
        self.pending_sends = 0
        #: Why reading is paused (pending sends over the limit, a publish rate); empty: reading.
        self._pause_reasons: set[str] = set()
        #: Whether this connection counts in the broker's throttled connections.
        self._throttled = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._keepalive: asyncio.TimerHandle | None = None
        self._seen_since_ping = True
        self._out: list[bytes | bytearray | memoryview] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._writing_paused = False
        self.security = auth.ConnectionSecurity(self)
        self.handlers = handlers.Handlers(self)

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        self.transport = typing.cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote_address = f"{peer[0]}:{peer[1]}" if peer else "?"
        ip = str(peer[0]) if peer else "?"
        refusal = self._connections.admit(ip)
        if refusal is not None:
            log.warning("closing connection from %s: %s", self.remote_address, refusal)
            self.transport.close()
            self.transport = None
            return
        self._admitted_ip = ip
        self.transport.set_write_buffer_limits(high=OUTBOUND_HIGH_WATER_BYTES)
        self._schedule_keepalive()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.decoder.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._seen_since_ping = True
        try:
            frames = self.decoder.buffer_updated(nbytes)
        except wire_errors.WireError as exc:
            log.warning("closing connection from %s: %s", self.remote_address, exc)
            self.close()
            return
        for received in frames:
            if self.transport is None or self.transport.is_closing():
                # Refused (a failed CONNECT) or closing: frames that came along are dropped.
                return
            try:
                self._handle(received)
            except Exception:
                log.exception("closing connection from %s after a failed command",
                              self.remote_address)
                self.close()
                return

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        for handle in list(self.consumers.values()):
            handle.subscription.dispatcher.wake()

    @property
    def writable(self) -> bool:
        """Whether consumers on this connection may be sent more MESSAGE frames now."""
        return not self._writing_paused and self.transport is not None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._keepalive is not None:
            self._keepalive.cancel()
        self.security.close()
        self.transport = None
        self._count_throttled(False)
        if self._admitted_ip is not None:
            self._connections.release(self._admitted_ip)
            self._admitted_ip = None
        self.spawn(self._cleanup())

    # Frames

    def _handle(self, received: frame.Frame) -> None:
        command = received.command
        if not self.connected:
            if command.type != T.CONNECT:
                log.warning("closing connection from %s: %s before CONNECT", self.remote_address,
                            T.Type.Name(command.type))
                self.close()
                return
            self.handlers.connect(command.connect)
            return
        handler = self.handlers.table.get(command.type)
        if handler is None:
            log.warning("closing connection from %s: unexpected command %s", self.remote_address,
                        T.Type.Name(command.type))
            self.close()
            return
        handler(received)

    def write(self, command: pb.BaseCommand) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self._queue_out(frame.encode_command(command))

    def write_parts(self, header: bytes, entry: bytes | bytearray | memoryview) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self._queue_out(header, entry)

    def _queue_out(self, *parts: bytes | bytearray | memoryview) -> None:
        """Frames written during one loop iteration go out together at its end (one send
        for all the receipts of a journal batch); bounded by what one iteration produces."""
        self._out.extend(parts)
        self._out_bytes += sum(len(part) for part in parts)
        if self._out_bytes >= OUTBOUND_BATCH_BYTES:
            self._flush_out()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_scheduled_out)

    def _flush_scheduled_out(self) -> None:
        self._flush_scheduled = False
        self._flush_out()

    def _flush_out(self) -> None:
        out, self._out, self._out_bytes = self._out, [], 0
        if out and self.transport is not None and not self.transport.is_closing():
            self.transport.writelines(out)

    def spawn(self, coro: Awaitable[Any], request_id: int | None = None) -> None:
        """Run a handler coroutine; an unexpected failure becomes an ERROR reply."""

        async def guarded() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if request_id is None:
                    log.exception("handler failed on %s", self.remote_address)
                    return
                log.info("request %s from %s failed: %s", request_id, self.remote_address, exc)
                self.write(replies.error(request_id, commands.server_error_of(exc), str(exc)))

        task = asyncio.get_running_loop().create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        if self.transport is not None:
            self._flush_out()
            self.transport.close()

    # Flow control of publishing

    def send_started(self) -> None:
        self.pending_sends += 1
        if self.pending_sends >= self.config.max_pending_publish_requests_per_connection:
            self._pause_reading(PAUSED_FOR_PENDING_SENDS)

    def send_finished(self) -> None:
        self.pending_sends -= 1
        limit = self.config.max_pending_publish_requests_per_connection
        if self.pending_sends <= limit // 2:
            self._resume_reading(PAUSED_FOR_PENDING_SENDS)

    def throttle_publishing(self, pause_s: float) -> None:
        """Stop reading for pause_s: a topic of this connection is over its publish rate (as
        Apache's broker pauses the channel); already throttled: the running pause stands."""
        if PAUSED_FOR_PUBLISH_RATE in self._pause_reasons:
            return
        self._pause_reading(PAUSED_FOR_PUBLISH_RATE)
        asyncio.get_running_loop().call_later(
            pause_s, self._resume_reading, PAUSED_FOR_PUBLISH_RATE)

    def _pause_reading(self, reason: str) -> None:
        if not self._pause_reasons and self.transport is not None:
            self.transport.pause_reading()
            self._count_throttled(True)
        self._pause_reasons.add(reason)

    def _resume_reading(self, reason: str) -> None:
        if reason not in self._pause_reasons:
            return
        self._pause_reasons.discard(reason)
        if not self._pause_reasons:
            self._count_throttled(False)
            if self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()

    def _count_throttled(self, throttled: bool) -> None:
        """Keep the broker's count of throttled connections (pulsar_broker_throttled_connections)
        in step with this connection, which is counted once while reading is paused."""
        if throttled != self._throttled:
            self._throttled = throttled
            self.service.telemetry.connection_throttled(throttled)

    # Keepalive

    def _schedule_keepalive(self) -> None:
        interval = self.config.keep_alive_interval_seconds
        if interval > 0:
            self._keepalive = asyncio.get_running_loop().call_later(interval, self._keepalive_tick)

    def _keepalive_tick(self) -> None:
        if self.transport is None:
            return
        if not self.connected:
            # A client sends CONNECT first thing; a connection without it after a whole
            # keepalive interval is idle or an attack, and holds a file descriptor.
            log.info("closing connection from %s: no CONNECT within %s s", self.remote_address,
                     self.config.keep_alive_interval_seconds)
            self.close()
            return
        if not self._seen_since_ping:
            log.info("closing connection from %s: no answer to keepalive", self.remote_address)
            self.close()
            return
        self._seen_since_ping = False
        if self.connected:
            self.write(replies.ping())
        self._schedule_keepalive()

    # ConsumerConnection (what consumers call)

    def send_message(self, consumer_id: int, position: ml.Position, redelivery_count: int,
                     data: bytes, partition: int,
                     ack_set: Sequence[int] | None = None) -> None:
        header, entry = wire_entry.message_frame_parts(
            consumer_id, position.ledger_id, position.entry_id, data,
            partition=partition, redelivery_count=redelivery_count, ack_set=ack_set,
            with_checksum=codes.supports_checksum(self.protocol_version))
        self.write_parts(header, entry)

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None:
        self.write(replies.active_consumer_change(consumer_id, is_active))

    def send_close_consumer(self, consumer_id: int) -> None:
        self.consumers.pop(consumer_id, None)
        self.write(replies.close_consumer(consumer_id, 0))

    def send_close_producer(self, producer_id: int) -> None:
        self.producers.pop(producer_id, None)
        self.write(replies.close_producer(producer_id, 0))

    # Teardown

    async def _cleanup(self) -> None:
        for waiting in list(self.waiting_producers.values()):
            waiting.cancel()
        self.waiting_producers.clear()
        for producer in list(self.producers.values()):
            producer.closed = True
            producer.topic.remove_producer(producer.producer)
        self.producers.clear()
        for consumer in list(self.consumers.values()):
            await self.handlers.remove_consumer(consumer)
        self.consumers.clear()


ConnectionFactory = Callable[[], ServerConnection]


async def start_server(service: BrokerService, host: str, port: int,
                       ssl_context: ssl.SSLContext | None = None) -> asyncio.Server:
    """Listen for binary-protocol clients, within brokerMaxConnections and
    brokerMaxConnectionsPerIp (counted over every listener of the broker); over TLS with
    ssl_context (brokerServicePortTls)."""
    security_guard.of(service)  # authentication settings are checked before listening
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: ServerConnection(service), host, port,
                                    reuse_address=True, ssl=ssl_context)


def topic_name_or_error(text: str) -> naming.TopicName:
    return naming.TopicName.parse(text)
