"""The proxy's own connections to brokers, for the requests it answers itself (lookups,
partition metadata, topic lists, schemas).

One connection per broker address, shared by every client's requests: each
request gets the proxy's own request id, its reply is matched by that id, and
every call has a timeout. When a connection closes, every call waiting on it
fails with BrokerUnavailableError; the next call opens a new connection.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import typing
import urllib.parse

from pulsar_common import client_auth
from pulsar_common.wire import commands as replies
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_proxy import errors

log = logging.getLogger(__name__)
T = pb.BaseCommand

CLIENT_VERSION = "pulsar-py-proxy 0.1.0"
PROTOCOL_VERSION = 20

#: Reply type -> the body field holding its request id.
_REPLY_BODIES = {
    T.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
    T.LOOKUP_RESPONSE: "lookupTopicResponse",
    T.GET_TOPICS_OF_NAMESPACE_RESPONSE: "getTopicsOfNamespaceResponse",
    T.GET_SCHEMA_RESPONSE: "getSchemaResponse",
    T.ERROR: "error",
}


def body_of(command: pb.BaseCommand) -> typing.Any:
    """The command's body message (the field named after its type)."""
    return getattr(command, command.DESCRIPTOR.fields_by_number[command.type].name)


def connect_command(credentials: client_auth.Credentials | None) -> pb.CommandConnect:
    """A CONNECT of the proxy's own, with its credentials (brokerClientAuthenticationPlugin)."""
    connect = pb.CommandConnect(client_version=CLIENT_VERSION, protocol_version=PROTOCOL_VERSION)
    if credentials is not None:
        connect.auth_method_name = credentials.method
        connect.auth_data = credentials.data
    return connect


def auth_response(connect: pb.CommandConnect) -> bytes:
    """AUTH_RESPONSE to a broker's AUTH_CHALLENGE: the credentials of the connection's
    CONNECT again."""
    data = pb.AuthData(auth_method_name=connect.auth_method_name, auth_data=connect.auth_data)
    response = pb.CommandAuthResponse(client_version=CLIENT_VERSION, response=data,
                                      protocol_version=PROTOCOL_VERSION)
    return frame.encode_command(T(type=T.AUTH_RESPONSE, authResponse=response))


def split_url(url: str) -> tuple[str, int, bool]:
    """(host, port, over TLS) of a pulsar:// or pulsar+ssl:// broker URL."""
    parsed = urllib.parse.urlsplit(url if "://" in url else f"pulsar://{url}")
    if parsed.hostname is None or parsed.port is None:
        raise errors.BrokerUnavailableError(f"not a broker address: {url!r}")
    return parsed.hostname, parsed.port, parsed.scheme == "pulsar+ssl"


class BrokerConnection(asyncio.Protocol):
    """One connection to a broker: CONNECT, then requests answered by request id."""

    def __init__(self, url: str, timeout_s: float, max_frame_size: int,
                 connect: pb.CommandConnect | None = None) -> None:
        self.url = url
        self._connect = connect if connect is not None else connect_command(None)
        self._timeout_s = timeout_s
        self._decoder = frame.FrameDecoder(max_frame_size)
        self._transport: asyncio.Transport | None = None
        self._connected: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending: dict[int, asyncio.Future[pb.BaseCommand]] = {}
        self._ids = itertools.count(1)
        self.closed = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = typing.cast(asyncio.Transport, transport)
        self._transport.write(frame.encode_command(T(type=T.CONNECT, connect=self._connect)))

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except wire_errors.WireError as exc:
            self._fail(errors.BrokerUnavailableError(f"bad frame from broker {self.url}: {exc}"))
            return
        for received in frames:
            self._handle(received.command)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(errors.BrokerUnavailableError(f"connection to broker {self.url} closed"), exc)

    # Requests

    async def wait_connected(self) -> None:
        await asyncio.wait_for(asyncio.shield(self._connected), self._timeout_s)

    async def request(self, command: pb.BaseCommand) -> pb.BaseCommand:
        """Send command with a fresh request id; the reply (its request id is ours)."""
        if self.closed or self._transport is None:
            raise errors.BrokerUnavailableError(f"connection to broker {self.url} is closed")
        request_id = next(self._ids)
        body_of(command).request_id = request_id
        waiter = asyncio.get_running_loop().create_future()
        self._pending[request_id] = waiter
        self._transport.write(frame.encode_command(command))
        try:
            return await asyncio.wait_for(waiter, self._timeout_s)
        except TimeoutError as exc:
            raise errors.BrokerUnavailableError(
                f"broker {self.url} did not answer within {self._timeout_s}s") from exc
        finally:
            self._pending.pop(request_id, None)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    # Internals

    def _handle(self, command: pb.BaseCommand) -> None:
        if command.type == T.CONNECTED:
            if not self._connected.done():
                self._connected.set_result(None)
        elif command.type == T.PING:
            assert self._transport is not None
            self._transport.write(replies.PONG_FRAME)
        elif command.type == T.AUTH_CHALLENGE:
            assert self._transport is not None
            self._transport.write(auth_response(self._connect))
        elif command.type in _REPLY_BODIES:
            waiter = self._pending.get(body_of(command).request_id)
            if waiter is not None and not waiter.done():
                waiter.set_result(command)
            elif command.type == T.ERROR and not self._connected.done():
                self._fail(errors.BrokerUnavailableError(
                    f"broker {self.url} refused the connection: {command.error.message}"))

    def _fail(self, error: errors.BrokerUnavailableError, cause: Exception | None = None) -> None:
        self.closed = True
        if cause is not None:
            error.__cause__ = cause
        if not self._connected.done():
            self._connected.set_exception(error)
            self._connected.exception()  # retrieved: nobody may be waiting any more
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(error)
        self._pending.clear()
        self.close()


class BrokerClientPool:
    """Connections to brokers by address, opened on first use and replaced once closed."""

    def __init__(self, timeout_s: float, max_frame_size: int,
                 ssl_context: ssl.SSLContext | None = None,
                 connect: pb.CommandConnect | None = None) -> None:
        self._timeout_s = timeout_s
        self._max_frame_size = max_frame_size
        #: For pulsar+ssl:// brokers (tlsEnabledWithBroker).
        self.ssl_context = ssl_context
        #: The CONNECT each connection opens with (who the proxy says it is, see identity.py).
        self.connect = connect
        self._connections: dict[str, asyncio.Future[BrokerConnection]] = {}

    async def request(self, url: str, host: str, port: int,
                      command: pb.BaseCommand) -> pb.BaseCommand:
        connection = await self._connection(url, host, port)
        return await connection.request(command)

    async def _connection(self, url: str, host: str, port: int) -> BrokerConnection:
        opening = self._connections.get(url)
        if opening is not None and opening.done() and (
                opening.exception() is not None or opening.result().closed):
            opening = None
        if opening is None:
            opening = asyncio.ensure_future(self._open(url, host, port))
            self._connections[url] = opening
        return await asyncio.shield(opening)

    async def _open(self, url: str, host: str, port: int) -> BrokerConnection:
        loop = asyncio.get_running_loop()
        use_tls = split_url(url)[2]
        if use_tls and self.ssl_context is None:
            raise errors.BrokerUnavailableError(f"{url} needs TLS: set tlsEnabledWithBroker")
        try:
            _, connection = await asyncio.wait_for(loop.create_connection(
                lambda: BrokerConnection(url, self._timeout_s, self._max_frame_size,
                                         self.connect), host, port,
                ssl=self.ssl_context if use_tls else None,
                server_hostname=host if use_tls else None),
                self._timeout_s)
            await connection.wait_connected()
        except (OSError, TimeoutError) as exc:
            raise errors.BrokerUnavailableError(f"cannot connect to broker {url}: {exc}") from exc
        return connection

    async def close(self) -> None:
        for opening in self._connections.values():
            if opening.done() and opening.exception() is None:
                opening.result().close()
            else:
                opening.cancel()
        self._connections.clear()
