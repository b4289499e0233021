"""Delivers attacks (tools.fuzz.frames) to a broker or proxy and checks the target still
serves everyone else.

``deliver`` opens one connection, says CONNECT, writes the attack's chunks and reads what
comes back until the peer closes or goes quiet. ``Witness`` is an official client with a
producer and a consumer on a topic of its own, opened before the attack: after each
attack (or every few seconds in the long run) a message must go round, and the
producer's connection must be the one it started with (same address at the broker), so a malformed frame closed only
its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request
import uuid

import pulsar
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

from tools.fuzz import frames

#: How long a connection may stay quiet after the attack before the fuzzer moves on.
QUIET_S = 0.02
#: How long the fuzzer reads replies at most (a reply stream must end or pause by then).
READ_LIMIT_S = 2.0
#: Bytes of replies read at most per connection (a FLOW with huge permits is answered
#: with messages; the fuzzer does not need them all).
READ_LIMIT_BYTES = 1 << 20


async def deliver(host: str, port: int, attack: frames.Attack,
                  proxy_to_broker_url: str = "", quiet_s: float = QUIET_S) -> str:
    """Send attack on a fresh connection; "closed" when the target closed it, else "open"."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(frames.connect_frame(proxy_to_broker_url=proxy_to_broker_url))
        for chunk in attack.chunks:
            if writer.transport.is_closing():
                return "closed"
            writer.write(chunk)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        return await _drain_replies(reader, writer, quiet_s)
    except ConnectionError:
        return "closed"
    finally:
        writer.transport.abort()


async def _drain_replies(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         quiet_s: float) -> str:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READ_LIMIT_S
    received = 0
    decoder = frame.FrameDecoder(max_frame_size=2 * frame.DEFAULT_MAX_FRAME_SIZE)
    while loop.time() < deadline and received < READ_LIMIT_BYTES:
        try:
            data = await asyncio.wait_for(reader.read(65536), quiet_s)
        except TimeoutError:
            return "open"
        if not data:
            return "closed"
        received += len(data)
        for reply in decoder.feed(data):
            if reply.command.type == pb.BaseCommand.PING and not writer.transport.is_closing():
                writer.write(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.PONG)))
    return "open"


class Witness:
    """An official client's producer and consumer that must keep working through the fuzz."""

    def __init__(self, service_url: str, web_url: str) -> None:
        self.web_url = web_url
        self.topic = f"persistent://public/default/fuzz-witness-{uuid.uuid4().hex[:8]}"
        self.client = pulsar.Client(service_url, operation_timeout_seconds=30,
                                    logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        self.consumer = self.client.subscribe(self.topic, "witness")
        self.producer = self.client.create_producer(self.topic, producer_name="fuzz-witness")
        self.sent = 0
        self.address = self._producer_address()

    def round_trip(self, timeout_ms: int = 10_000) -> None:
        """One message sent and received; raises when the target no longer serves it."""
        self.sent += 1
        body = f"witness-{self.sent}".encode()
        self.producer.send(body)
        while True:
            message = self.consumer.receive(timeout_millis=timeout_ms)
            self.consumer.acknowledge(message)
            if message.data() == body:
                return

    def connection_kept(self) -> bool:
        """The producer is still on the connection it was created on (the broker sees the
        same remote address and port)."""
        return self._producer_address() == self.address

    def _producer_address(self) -> str:
        path = "/admin/v2/" + self.topic.replace("://", "/") + "/stats"
        with urllib.request.urlopen(self.web_url + path, timeout=30) as reply:
            stats = json.loads(reply.read())
        publishers = [p for p in stats.get("publishers", [])
                      if p.get("producerName") == "fuzz-witness"]
        return str(publishers[0].get("address", "")) if publishers else ""

    def close(self) -> None:
        with contextlib.suppress(pulsar.PulsarException):
            self.client.close()
