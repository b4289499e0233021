"""The proxy's own behaviour: admin and metrics over HTTP, limits, and bad input that must
close only the connection it came on."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

import pulsar
from prometheus_client.parser import text_string_to_metric_families
from pulsar_broker import testing as broker_testing
from pulsar_common import process_metrics
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _metric(proxy: broker_testing.ProxyProcess, name: str) -> float:
    _, text = _get(proxy.web_url + "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics:\n{text}")


def _connect_frame(proxy_to: str | None = None) -> bytes:
    connect = pb.CommandConnect(client_version="raw-test", protocol_version=20)
    if proxy_to is not None:
        connect.proxy_to_broker_url = proxy_to
    return frame.encode_command(T(type=T.CONNECT, connect=connect))


def _read_frame(sock: socket.socket) -> pb.BaseCommand | None:
    """The next frame's command, None when the proxy closed the connection."""
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    body = sock.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
    return frame.decode_frame(body).command


def _raw(proxy: broker_testing.ProxyProcess) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.broker_port), timeout=30)
    sock.settimeout(30)
    return sock


def test_pulsar_admin_works_through_the_proxy(proxy: broker_testing.ProxyProcess) -> None:
    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main",
                               "--admin-url", proxy.web_url, *args],
                              capture_output=True, text=True, timeout=90, check=False)

    assert "public" in admin("tenants", "list").stdout
    created = admin("topics", "create-partitioned-topic",
                    "persistent://public/default/via-proxy-admin", "-p", "2")
    assert created.returncode == 0, created.stderr
    status, text = _get(proxy.web_url + "/admin/v2/persistent/public/default/partitioned")
    assert status == 200 and "persistent://public/default/via-proxy-admin" in json.loads(text)
    status, text = _get(proxy.web_url + "/admin/v2/tenants/no-such-tenant")
    assert status == 404  # the broker's answer, passed through


def test_http_lookup_and_broker_metrics_through_the_proxy(
        proxy: broker_testing.ProxyProcess, standalone: broker_testing.StandaloneProcess) -> None:
    status, text = _get(proxy.web_url + "/lookup/v2/topic/persistent/public/default/looked-up")
    assert status == 200 and json.loads(text)["brokerUrl"] == standalone.service_url
    assert _get(proxy.web_url + "/status.html") == (200, "OK")
    assert _get(proxy.web_url + "/metrics/broker/nobody:1")[0] == 404


def test_proxy_metrics_count_connections_bytes_and_lookups(
        proxy: broker_testing.ProxyProcess, topic: str) -> None:
    before_bytes = _metric(proxy, "pulsar_proxy_binary_bytes_total")
    before_lookups = _metric(proxy, "pulsar_proxy_lookup_requests_total")
    client = pulsar.Client(proxy.service_url, operation_timeout_seconds=30)
    try:
        client.create_producer(topic).send(b"x" * 10_000)
        assert _metric(proxy, "pulsar_proxy_active_connections") >= 1
    finally:
        client.close()
    assert _metric(proxy, "pulsar_proxy_binary_bytes_total") >= before_bytes + 10_000
    assert _metric(proxy, "pulsar_proxy_lookup_requests_total") >= before_lookups + 1


def test_proxy_metrics_include_the_process_series(proxy: broker_testing.ProxyProcess) -> None:
    _, text = _get(proxy.web_url + "/metrics")
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert set(process_metrics.PROCESS_SERIES) <= names
    assert _metric(proxy, "process_resident_memory_bytes") > 0


def test_garbage_closes_only_its_own_connection(proxy: broker_testing.ProxyProcess,
                                                client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(topic)
    producer.send(b"before")
    for garbage in (b"\xff\xff\xff\xff" + b"x" * 64,        # frame far over the limit
                    struct.pack(">II", 8, 4) + b"\x08\x99\x01\x00",  # not a valid command
                    _connect_frame()[:3] + b"\x00" * 20):    # sizes that do not add up
        sock = _raw(proxy)
        sock.sendall(garbage)
        assert _read_frame(sock) is None
        sock.close()
    producer.send(b"after")  # the application's connection is untouched
    sock = _raw(proxy)
    sock.sendall(frame.encode_command(T(type=T.PING, ping=pb.CommandPing())))
    assert _read_frame(sock) is None  # anything before CONNECT is refused
    sock.close()


def test_relay_only_to_allowed_brokers(make_proxy: Callable[..., broker_testing.ProxyProcess],
                                      standalone: broker_testing.StandaloneProcess) -> None:
    """The proxy must not become a way to reach any port: a listening port that is not an
    allowed broker port (the broker's own HTTP port here) is refused before connecting."""
    guarded = make_proxy(brokerProxyAllowedTargetPorts=str(standalone.broker_port),
                         brokerProxyAllowedHostNames="127.0.0.*")
    for target in (f"127.0.0.1:{standalone.web_port}", f"localhost:{standalone.broker_port}",
                   f"pulsar://127.0.0.1:{standalone.broker_port}/extra", "not an address"):
        sock = _raw(guarded)
        sock.sendall(_connect_frame(target))
        reply = _read_frame(sock)
        assert reply is not None and reply.type == T.ERROR, target
        assert reply.error.error == pb.AuthorizationError, (target, reply.error.message)
        assert _read_frame(sock) is None
        sock.close()
    sock = _raw(guarded)
    sock.sendall(_connect_frame(f"127.0.0.1:{standalone.broker_port}"))
    reply = _read_frame(sock)
    assert reply is not None and reply.type == T.CONNECTED  # the broker's own answer
    sock.close()


def test_lookup_connection_answers_connected_and_pings(proxy: broker_testing.ProxyProcess) -> None:
    sock = _raw(proxy)
    sock.sendall(_connect_frame())
    reply = _read_frame(sock)
    assert reply is not None and reply.type == T.CONNECTED
    sock.sendall(frame.encode_command(T(type=T.PING, ping=pb.CommandPing())))
    reply = _read_frame(sock)
    assert reply is not None and reply.type == T.PONG
    # A producer belongs on a relayed connection, never on a lookup connection.
    producer = pb.CommandProducer(topic="persistent://public/default/x", producer_id=1,
                                  request_id=1)
    sock.sendall(frame.encode_command(T(type=T.PRODUCER, producer=producer)))
    assert _read_frame(sock) is None
    sock.close()


def test_connections_over_the_limit_are_closed_at_once(make_proxy: Callable[..., broker_testing.ProxyProcess]) -> None:
    limited = make_proxy(maxConcurrentInboundConnections="2")
    kept = [_raw(limited), _raw(limited)]
    for sock in kept:
        sock.sendall(_connect_frame())
        assert _read_frame(sock) is not None
    extra = _raw(limited)
    extra.sendall(_connect_frame())
    try:
        assert _read_frame(extra) is None
    except ConnectionResetError:
        pass  # closed at once, maybe before the CONNECT arrived
    assert _metric(limited, "pulsar_proxy_rejected_connections_total") == 1
    for sock in kept:
        sock.close()


def test_lookups_over_the_limit_get_too_many_requests(make_proxy: Callable[..., broker_testing.ProxyProcess]) -> None:
    limited = make_proxy(maxConcurrentLookupRequests="1")
    sock = _raw(limited)
    sock.sendall(_connect_frame())
    assert _read_frame(sock) is not None
    burst = b"".join(frame.encode_command(T(type=T.LOOKUP, lookupTopic=pb.CommandLookupTopic(
        topic="persistent://public/default/burst", request_id=i))) for i in range(1, 11))
    sock.sendall(burst)
    answers = {}
    for _ in range(10):
        reply = _read_frame(sock)
        assert reply is not None and reply.type == T.LOOKUP_RESPONSE
        answers[reply.lookupTopicResponse.request_id] = reply.lookupTopicResponse
    assert sorted(answers) == list(range(1, 11))
    refused = [a for a in answers.values() if a.error == pb.TooManyRequests]
    served = [a for a in answers.values() if a.response == pb.CommandLookupTopicResponse.Connect]
    assert len(served) >= 1 and len(refused) >= 1 and len(served) + len(refused) == 10
    assert all(a.proxy_through_service_url for a in served)
    assert _metric(limited, "pulsar_proxy_rejected_lookup_requests_total") == len(refused)
    sock.close()
