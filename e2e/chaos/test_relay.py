"""The chaos run's fault-injecting relay, in front of a small echo server."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest
from pulsar_common import testing

from tools.chaos import relay


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def relayed() -> Iterator[relay.Relay]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    running = relay.Relay(testing.free_port(), server.server_address[1])
    running.start()
    yield running
    running.stop()
    server.shutdown()
    server.server_close()


def connect(r: relay.Relay) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", r.listen_port), timeout=2)
    sock.settimeout(0.5)
    return sock


def echoed(sock: socket.socket, data: bytes = b"ping") -> bytes | None:
    try:
        sock.sendall(data)
        return sock.recv(64) or None
    except (TimeoutError, ConnectionError):
        return None


def test_bytes_pass_both_ways_until_a_fault(relayed: relay.Relay) -> None:
    assert echoed(connect(relayed)) == b"ping"


def test_a_cut_resets_open_connections_and_refuses_new_ones_until_healed(
        relayed: relay.Relay) -> None:
    open_one = connect(relayed)
    assert echoed(open_one) == b"ping"
    relayed.set_mode("cut")
    time.sleep(0.1)
    assert echoed(open_one) is None
    assert echoed(connect(relayed)) is None
    relayed.heal()
    assert echoed(connect(relayed)) == b"ping"


def test_a_drop_swallows_everything_without_closing(relayed: relay.Relay) -> None:
    relayed.set_mode("drop")
    sock = connect(relayed)
    assert echoed(sock) is None
    relayed.heal()
    assert echoed(connect(relayed)) == b"ping"


def test_a_delay_holds_each_chunk_back(relayed: relay.Relay) -> None:
    relayed.set_mode("delay", delay_ms=200)
    sock = connect(relayed)
    sock.settimeout(3)
    started = time.monotonic()
    assert echoed(sock) == b"ping"
    assert time.monotonic() - started >= 0.4  # held once each way
