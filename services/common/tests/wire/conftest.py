"""A tiny in-process broker built only from the wire codec, for interop tests.

It answers just enough of the protocol for the official client to produce
and consume one topic: CONNECT, PARTITIONED_METADATA (0 partitions), LOOKUP
(Connect to itself), PRODUCER, SEND (stored as entries), SUBSCRIBE, FLOW
(MESSAGE frames from the stored entries), ACK, CLOSE_*, PING. Everything it
decodes is recorded so tests can compare it with what the client was asked
to send.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from pulsar_common.wire import codes, commands, entry, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
LEDGER_ID = 7


@dataclass
class StoredEntry:
    entry_id: int
    data: bytes
    crc: int


@dataclass
class FakeBroker:
    host: str = "127.0.0.1"
    port: int = 0
    received: list[frame.Frame] = field(default_factory=list)
    entries: list[StoredEntry] = field(default_factory=list)
    acks: list[pb.CommandAck] = field(default_factory=list)
    connects: list[pb.CommandConnect] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    broker_entry_metadata: bool = True
    ledger_id: int = LEDGER_ID
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def url(self) -> str:
        return f"pulsar://{self.host}:{self.port}"

    def sends(self) -> list[frame.Frame]:
        return [f for f in self.received if f.command.type == T.SEND]

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        connection = _Connection(self, writer)
        decoder = frame.FrameDecoder()
        try:
            while chunk := await reader.read(65536):
                for decoded in decoder.feed(chunk):
                    self.received.append(decoded)
                    connection.handle(decoded)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception as exc:  # noqa: BLE001 - recorded so the test fails with the cause
            self.errors.append(exc)
        finally:
            self._tasks.discard(task)
            writer.close()


class _Connection:
    def __init__(self, broker: FakeBroker, writer: asyncio.StreamWriter) -> None:
        self.broker = broker
        self.writer = writer
        self.protocol_version = 0
        self.client_wants_bem = False

    def send(self, command: pb.BaseCommand) -> None:
        self.writer.write(frame.encode_command(command))

    def handle(self, decoded: frame.Frame) -> None:
        cmd = decoded.command
        kind = cmd.type
        if kind == T.CONNECT:
            self.broker.connects.append(cmd.connect)
            self.protocol_version = codes.negotiate(cmd.connect.protocol_version)
            flags = cmd.connect.feature_flags
            self.client_wants_bem = flags.supports_broker_entry_metadata
            self.send(
                commands.connected(
                    "pulsar-py-test",
                    self.protocol_version,
                    max_message_size=frame.DEFAULT_MAX_MESSAGE_SIZE,
                    supports_broker_entry_metadata=self.broker.broker_entry_metadata,
                )
            )
        elif kind == T.PARTITIONED_METADATA:
            self.send(commands.partitioned_metadata_response(cmd.partitionMetadata.request_id, 0))
        elif kind == T.LOOKUP:
            self.send(commands.lookup_response(cmd.lookupTopic.request_id, self.broker.url))
        elif kind == T.PRODUCER:
            name = cmd.producer.producer_name or "fake-producer"
            self.send(commands.producer_success(cmd.producer.request_id, name))
        elif kind == T.SEND:
            self._store(decoded)
        elif kind == T.SUBSCRIBE:
            self.send(commands.success(cmd.subscribe.request_id))
        elif kind == T.FLOW:
            self._dispatch(cmd.flow.consumer_id, cmd.flow.messagePermits)
        elif kind == T.ACK:
            self.broker.acks.append(cmd.ack)
            if cmd.ack.HasField("request_id"):
                self.send(commands.ack_response(cmd.ack.consumer_id, cmd.ack.request_id))
        elif kind == T.CLOSE_PRODUCER:
            self.send(commands.success(cmd.close_producer.request_id))
        elif kind == T.CLOSE_CONSUMER:
            self.send(commands.success(cmd.close_consumer.request_id))
        elif kind == T.PING:
            self.writer.write(commands.PONG_FRAME)

    def _store(self, decoded: frame.Frame) -> None:
        send = decoded.command.send
        if not decoded.checksum_valid:
            self.send(
                commands.send_error(
                    send.producer_id, send.sequence_id, codes.ServerError.ChecksumError, "bad crc"
                )
            )
            return
        assert decoded.entry is not None
        data = bytes(decoded.entry)
        crc = decoded.checksum if decoded.checksum is not None else frame.checksum(data)
        stored = StoredEntry(len(self.broker.entries), data, crc)
        self.broker.entries.append(stored)
        self.send(
            commands.send_receipt(send.producer_id, send.sequence_id, LEDGER_ID, stored.entry_id)
        )

    def _dispatch(self, consumer_id: int, permits: int) -> None:
        for stored in self.broker.entries[:permits]:
            bem = None
            if self.client_wants_bem and self.broker.broker_entry_metadata:
                bem = pb.BrokerEntryMetadata(broker_timestamp=1234, index=stored.entry_id)
            header, data = entry.message_frame_parts(
                consumer_id,
                LEDGER_ID,
                stored.entry_id,
                stored.data,
                entry_checksum=stored.crc,
                with_checksum=codes.supports_checksum(self.protocol_version),
                broker_entry_metadata=bem,
            )
            self.writer.writelines([header, data])


@pytest.fixture
async def fake_broker() -> AsyncIterator[FakeBroker]:
    broker = FakeBroker()
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()
