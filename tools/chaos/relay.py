"""A fault-injecting TCP relay: what sits between the brokers and one bookie in a chaos run.

A bookie registers the relay's address as its bookie id, so every ledger client
(brokers, other bookies' recovery) reaches it through here. The relay passes bytes
both ways unchanged until the nemesis asks for a fault:

- ``delay``: every chunk waits ``delay_ms`` before it is forwarded (a slow network);
- ``drop``: bytes are read and thrown away both ways; connections stay open but nothing
  arrives (a black hole, as a partition looks to TCP until a timeout);
- ``cut``: every open connection is reset and new ones are refused until healed.

It runs its own event loop on a thread of the harness process, so the processes under
test are real and unmodified.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading

#: Bytes read per chunk.
CHUNK_BYTES = 64 * 1024


@dataclasses.dataclass
class Mode:
    """What the relay does to traffic right now."""

    kind: str = "pass"  # pass | delay | drop | cut
    delay_ms: int = 0


class Relay:
    """Listens on listen_port and forwards to target_port (both on loopback)."""

    def __init__(self, listen_port: int, target_port: int, host: str = "127.0.0.1") -> None:
        self.host = host
        self.listen_port = listen_port
        self.target_port = target_port
        self.mode = Mode()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"relay-{self.listen_port}",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"relay on port {self.listen_port} did not start")

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def set_mode(self, kind: str, delay_ms: int = 0) -> None:
        """Switch the fault (thread-safe); `cut` also resets every open connection."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("relay not started")
        self.mode = Mode(kind, delay_ms)
        if kind in ("cut", "drop"):
            loop.call_soon_threadsafe(self._reset_all)

    def heal(self) -> None:
        self.set_mode("pass")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = loop.run_until_complete(
            asyncio.start_server(self._accept, self.host, self.listen_port))
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            self._reset_all()
            loop.run_until_complete(asyncio.sleep(0))
            loop.close()

    def _reset_all(self) -> None:
        for writer in list(self._writers):
            transport = writer.transport
            if isinstance(transport, asyncio.Transport):
                transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode.kind == "cut":
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            for one in (writer, up_writer):
                self._writers.discard(one)
                one.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while True:
                data = await reader.read(CHUNK_BYTES)
                if not data:
                    break
                mode = self.mode
                if mode.kind == "drop":
                    continue
                if mode.kind == "cut":
                    break
                if mode.kind == "delay" and mode.delay_ms > 0:
                    await asyncio.sleep(mode.delay_ms / 1000)
                writer.write(data)
                await writer.drain()
        # Closing one direction ends the other: a half-open bookie connection is of no use.
        writer.transport.abort()
