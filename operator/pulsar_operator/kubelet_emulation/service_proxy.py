"""kube-proxy for the harness: a TCP forwarder per ClusterIP Service port.

Each Service port listens on the Service's own loopback address; every new
connection goes to one ready endpoint, picked at random as kube-proxy's
iptables mode does, and re-resolved per connection, so a pod that stops
being ready gets no new connections. Bytes are relayed both ways unchanged,
half-closes included. With no ready endpoint the connection is refused
(closed at once), as on a cluster.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import random
from collections.abc import Callable

from pulsar_operator.kubelet_emulation import tasks

log = logging.getLogger(__name__)
CHUNK_BYTES = 64 * 1024
CONNECT_TIMEOUT_S = 5.0


@dataclasses.dataclass(frozen=True)
class Listener:
    """One Service port: where it listens and which (namespace, service, port name) it serves."""

    ip: str
    port: int
    namespace: str
    service: str
    port_name: str


#: Listener -> the (pod ip, target port) pairs that may take a connection now.
Resolver = Callable[[Listener], list[tuple[str, int]]]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK_BYTES):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.transport.abort()


class ServiceProxy:
    def __init__(self, resolve: Resolver, rng: random.Random | None = None) -> None:
        self._resolve = resolve
        self._rng = rng or random.Random()
        self._servers: dict[Listener, asyncio.Server] = {}
        self._connections: set[asyncio.Task[None]] = set()

    async def sync(self, wanted: set[Listener]) -> None:
        """Listen on exactly `wanted`."""
        for listener in set(self._servers) - wanted:
            self._servers.pop(listener).close()
        for listener in wanted - set(self._servers):
            try:
                self._servers[listener] = await asyncio.start_server(
                    functools.partial(self._accept, listener), listener.ip, listener.port)
            except OSError as exc:
                log.error("cannot listen for Service %s/%s on %s:%s: %s", listener.namespace, listener.service,
                          listener.ip, listener.port, exc)

    async def close(self) -> None:
        await self.sync(set())
        await tasks.cancel_and_wait(*self._connections)

    async def _accept(self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._relay(listener, reader, writer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _relay(self, listener: Listener, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        targets = self._resolve(listener)
        if not targets:
            return
        ip, port = self._rng.choice(targets)
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                upstream_reader, upstream_writer = await asyncio.open_connection(ip, port)
        except (OSError, TimeoutError):
            return
        try:
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            upstream_writer.close()
