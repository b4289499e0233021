"""Connections are bounded: HTTP connections in all (maxHttpServerConnections), idle ones
and ones sending their headers a byte at a time are closed (httpServerIdleTimeoutMillis),
binary-protocol connections per client address (brokerMaxConnectionsPerIp, each refusal
counted in pulsar_connection_create_fail_count), and a binary connection that never sends
CONNECT is closed after a keepalive interval."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any

MAX_HTTP_CONNECTIONS = 50
HTTP_IDLE_TIMEOUT_S = 2.0
MAX_CONNECTIONS_PER_IP = 20
KEEPALIVE_S = 5.0


def _closed_by_peer(sock: socket.socket, within_s: float) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _gauge(standalone: Any, name: str) -> float:
    """One of the broker's connection gauges, from /metrics."""
    with urllib.request.urlopen(standalone.web_url + "/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith(name + "{"))


def test_idle_http_connections_are_bounded_and_closed(standalone: Any, probe: Any) -> None:
    baseline = probe.open_fds()
    idle = [socket.create_connection(("127.0.0.1", standalone.web_port), timeout=10)
            for _ in range(4 * MAX_HTTP_CONNECTIONS)]
    try:
        probe.wait_until(lambda: probe.open_fds() <= baseline + MAX_HTTP_CONNECTIONS + 5,
                         "connections over the limit closed", timeout_s=10)
        assert sum(_closed_by_peer(s, HTTP_IDLE_TIMEOUT_S + 5) for s in idle) == len(idle)
        probe.wait_until(lambda: probe.open_fds() <= baseline + 2, "idle connections closed",
                         timeout_s=10)
    finally:
        for sock in idle:
            sock.close()
    with urllib.request.urlopen(standalone.web_url + "/admin/v2/clusters", timeout=10) as reply:
        assert json.loads(reply.read()) == ["standalone"]


def test_headers_sent_a_byte_at_a_time_do_not_hold_a_connection(standalone: Any) -> None:
    request = b"GET /admin/v2/clusters HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 1000
    sock = socket.create_connection(("127.0.0.1", standalone.web_port), timeout=10)
    started = time.monotonic()
    sent = 0
    try:
        while sent < len(request) and time.monotonic() - started < HTTP_IDLE_TIMEOUT_S + 3:
            sock.sendall(request[sent:sent + 1])
            sent += 1
            if _closed_by_peer(sock, 0.1):
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        sock.close()
    assert sent < len(request)
    assert time.monotonic() - started < HTTP_IDLE_TIMEOUT_S + 3


def test_binary_connections_per_address_are_bounded(
        standalone: Any, probe: Any, raw_connection: Callable[..., Any]) -> None:
    failed_before = _gauge(standalone, "pulsar_connection_create_fail_count")
    opened, refused = [], 0
    for _ in range(MAX_CONNECTIONS_PER_IP + 10):
        try:
            opened.append(raw_connection())
        except (ConnectionError, OSError):
            refused += 1
    assert len(opened) <= MAX_CONNECTIONS_PER_IP and refused >= 10
    # Each refusal is a failed connection in /metrics, as Apache counts them.
    assert _gauge(standalone, "pulsar_connection_create_fail_count") >= failed_before + refused
    for cnx in opened:
        cnx.close()

    def connects() -> bool:
        try:
            raw_connection()
        except (ConnectionError, OSError):
            return False
        return True

    probe.wait_until(connects, "a connection after the others closed", timeout_s=10)


def test_a_binary_connection_without_connect_is_closed(standalone: Any) -> None:
    sock = socket.create_connection(("127.0.0.1", standalone.broker_port), timeout=10)
    try:
        assert _closed_by_peer(sock, KEEPALIVE_S + 2)
    finally:
        sock.close()
