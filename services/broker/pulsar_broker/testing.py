"""Start a real `pulsar standalone` process on free ports, for tests and benchmarks; and the
in-process parts of one broker's storage (bookie engine, RocksDB metadata, managed-ledger
factory) that managed-ledger and dispatcher tests share."""

from __future__ import annotations

import dataclasses
import itertools
import os
import pathlib
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Self

from pulsar_common import testing
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

if TYPE_CHECKING:
    import pulsar
    from pulsar_bookie.client import local
    from pulsar_bookie.storage import engine
    from pulsar_common import clock
    from pulsar_common.metadata import rocksdb

    from pulsar_broker.managed_ledger import factory


class ServiceProcess:
    """A `pulsar <command>` child process serving the binary and web ports."""

    command: tuple[str, ...] = ()

    def __init__(self, data_dir: pathlib.Path, overrides: dict[str, str] | None = None,
                 log_path: pathlib.Path | None = None) -> None:
        self.data_dir = data_dir
        self.broker_port = testing.free_port()
        self.web_port = testing.free_port()
        self.bookie_port = testing.free_port()
        self.overrides = {
            "brokerServicePort": str(self.broker_port),
            "webServicePort": str(self.web_port),
            "advertisedAddress": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            **(overrides or {}),
        }
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        #: More command-line arguments, e.g. ["--config", path].
        self.extra_arguments: list[str] = []

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def arguments(self) -> list[str]:
        args = [sys.executable, "-m", "pulsar_common.cli.main", *self.command,
                *self.extra_arguments]
        for key, value in self.overrides.items():
            args += ["--conf", f"{key}={value}"]
        return args

    def start(self, timeout_s: float = 60.0) -> Self:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until it exits
        self.process = subprocess.Popen(testing.dying_with_parent(self.arguments()), stdout=log,
                                        stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        testing.wait_until(self.ready, timeout_s, f"{' '.join(self.command)} (log {self.log_path})",
                           self.process)
        return self

    def ready(self) -> bool:
        """Both listeners accept connections; the web listener is the last thing started."""
        return testing.port_open(self.broker_port) and testing.port_open(self.web_port)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            testing.stop_process(self.process, timeout_s=20)

    def kill(self) -> None:
        if self.process is not None:
            testing.kill_process(self.process)


class StandaloneProcess(ServiceProcess):
    """`pulsar standalone` with its data under data_dir."""

    def __init__(self, data_dir: pathlib.Path, overrides: dict[str, str] | None = None,
                 log_path: pathlib.Path | None = None) -> None:
        super().__init__(data_dir, overrides, log_path)
        self.overrides.setdefault("bookiePort", str(self.bookie_port))

    @property
    def command(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("standalone", "--data-dir", str(self.data_dir))


class TlsStandaloneProcess(StandaloneProcess):
    """`pulsar standalone` with TLS ports (brokerServicePortTls, webServicePortTls) next to
    the plain ones, or instead of them with plain=False; tls_settings are broker.conf keys
    (pulsar_common.testing_certs.broker_tls_settings gives the certificate ones)."""

    def __init__(self, data_dir: pathlib.Path, tls_settings: dict[str, str],
                 overrides: dict[str, str] | None = None, plain: bool = True,
                 host: str = "127.0.0.1") -> None:
        super().__init__(data_dir, overrides)
        self.host = host
        self.broker_port_tls = testing.free_port()
        self.web_port_tls = testing.free_port()
        self.plain = plain
        self.overrides.update({"brokerServicePortTls": str(self.broker_port_tls),
                               "webServicePortTls": str(self.web_port_tls),
                               "advertisedAddress": host, **tls_settings})
        if not plain:
            self.overrides.update({"brokerServicePort": "", "webServicePort": ""})

    @property
    def service_url_tls(self) -> str:
        return f"pulsar+ssl://{self.host}:{self.broker_port_tls}"

    @property
    def web_url_tls(self) -> str:
        return f"https://{self.host}:{self.web_port_tls}"

    def ready(self) -> bool:
        tls_ready = (testing.port_open(self.broker_port_tls)
                     and testing.port_open(self.web_port_tls))
        return tls_ready and (not self.plain or super().ready())


class BrokerProcess(ServiceProcess):
    """`pulsar broker` of a cluster whose metadata is at metadata_url (etcd)."""

    command = ("broker",)

    def __init__(self, data_dir: pathlib.Path, metadata_url: str,
                 overrides: dict[str, str] | None = None) -> None:
        super().__init__(data_dir, {"metadataStoreUrl": metadata_url,
                                    "clusterName": "local", **(overrides or {})})


class ProxyProcess(ServiceProcess):
    """`pulsar proxy` in front of brokers: found through metadata_url (their registrations)
    or, when given, the fixed broker URLs."""

    command = ("proxy",)

    def __init__(self, data_dir: pathlib.Path, overrides: dict[str, str]) -> None:
        super().__init__(data_dir)
        self.overrides = {
            "servicePort": str(self.broker_port),
            "webServicePort": str(self.web_port),
            "bindAddress": "127.0.0.1",
            "advertisedAddress": "127.0.0.1",
            # Brokers of local clusters listen on free ports, not 6650.
            "brokerProxyAllowedTargetPorts": "*",
            **overrides,
        }


def get_json(url: str) -> Any:
    """GET url (following a non-owner's 307) and parse its JSON."""
    import json
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as reply:
        return json.loads(reply.read())


def broker_id(broker: ServiceProcess) -> str:
    """The id a broker registers under (host:webPort)."""
    return broker.web_url.removeprefix("http://")


def owned(broker: ServiceProcess, cluster: str = "local") -> set[str]:
    """The namespace bundles a broker of a local cluster owns, as it says over HTTP."""
    result = get_json(
        f"{broker.web_url}/admin/v2/brokers/{cluster}/{broker_id(broker)}/ownedNamespaces")
    assert isinstance(result, dict)
    return set(result)


def one_topic_per_bundle() -> dict[Any, str]:
    """Topic names of public/default chosen so that each of its default bundles holds one."""
    from pulsar_common import naming

    from pulsar_broker import resources
    from pulsar_broker.namespace import bundles

    policies = resources.default_policies()
    chosen: dict[Any, str] = {}
    index = 0
    while len(chosen) < resources.DEFAULT_BUNDLES:
        name = f"persistent://public/default/spread-{index}"
        chosen.setdefault(bundles.bundle_of(naming.TopicName.parse(name), policies), name)
        index += 1
    return chosen


def initialize_cluster_metadata(metadata_url: str, cluster: str, web_service_url: str,
                                broker_service_url: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pulsar_common.cli.main", "initialize-cluster-metadata",
         "--cluster", cluster, "--metadata-store", metadata_url,
         "--web-service-url", web_service_url, "--broker-service-url", broker_service_url],
        check=True, capture_output=True)


def receive_all(consumer: pulsar.Consumer, count: int, timeout_ms: int = 10_000,
                ack: bool = True) -> list[pulsar.Message]:
    messages = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=timeout_ms)
        messages.append(msg)
        if ack:
            consumer.acknowledge(msg)
    return messages


def read_topic(service_url: str, topic: str, timeout_ms: int = 30_000) -> list[bytes]:
    """Every message stored on topic, from the earliest, read by a fresh official client."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        found = []
        while reader.has_message_available():
            found.append(reader.read_next(timeout_ms).data())
        return found
    finally:
        client.close()


def nothing_more(consumer: pulsar.Consumer, timeout_ms: int = 300) -> bool:
    """True when no message arrives within timeout_ms."""
    import pulsar

    try:
        consumer.receive(timeout_millis=timeout_ms)
    except pulsar.Timeout:
        return True
    return False


def close_after_broker_death(client: pulsar.Client) -> None:
    """Close a client whose broker was just killed.

    The official client tries to close its producers and consumers on the broker and
    reports NotConnected when the connection is already gone; that is the client's
    answer to a dead broker, not a failure of the test around it.
    """
    import pulsar

    try:
        client.close()
    except pulsar.NotConnected:
        pass


#: The bookie id of the in-process bookie engine of a ManagedLedgerStack.
STACK_BOOKIE_ID = "127.0.0.1:3181"

#: Test defaults: no minimum ledger age, cursors persisted on every acknowledgement.
STACK_ML_CONFIG: dict[str, Any] = {
    "min_ledger_rollover_time_minutes": 0,
    "cursor_position_flush_seconds": 0,
    "cache_size_mb": 1,
}



class RawConnection:
    """A hand-driven binary-protocol connection, for frames the official client never sends."""

    def __init__(self, port: int, timeout_s: float = 10.0,
                 receive_buffer_bytes: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer_bytes is not None:
            # Before connecting, so that the TCP window stays this small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        self.sock.settimeout(timeout_s)
        self.sock.connect(("127.0.0.1", port))
        self.decoder = frame.FrameDecoder()
        self.frames: list[Any] = []
        self._request_ids = itertools.count(1)
        connect = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
        connect.connect.client_version = "raw-test"
        connect.connect.protocol_version = 20
        assert self.request(connect).command.type == pb.BaseCommand.CONNECTED

    def next_request_id(self) -> int:
        return next(self._request_ids)

    def send(self, command: pb.BaseCommand) -> None:
        self.sock.sendall(frame.encode_command(command))

    def request(self, command: pb.BaseCommand) -> Any:
        """Send command and return the next frame that is not a PING (answered)."""
        self.send(command)
        return self.read()

    def read(self) -> Any:
        """The next frame other than PING; raises TimeoutError after the socket's timeout."""
        while True:
            while not self.frames:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("closed by the broker")
                self.frames.extend(self.decoder.feed(data))
            received = self.frames.pop(0)
            if received.command.type == pb.BaseCommand.PING:
                self.send(pb.BaseCommand(type=pb.BaseCommand.PONG))
                continue
            return received

    def create_producer(self, topic: str, producer_id: int = 1,
                        producer_name: str | None = None) -> Any:
        """PRODUCER; the PRODUCER_SUCCESS command (name, last sequence id) it is answered."""
        command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
        command.producer.topic = topic
        command.producer.producer_id = producer_id
        command.producer.request_id = self.next_request_id()
        if producer_name is not None:
            command.producer.producer_name = producer_name
        reply = self.request(command)
        assert reply.command.type == pb.BaseCommand.PRODUCER_SUCCESS, reply.command
        return reply.command.producer_success

    def send_message(self, producer_name: str, sequence_id: int, payload: bytes,
                     producer_id: int = 1) -> None:
        """SEND one message (no reply read: see `read`)."""

        command = pb.BaseCommand(type=pb.BaseCommand.SEND)
        command.send.producer_id = producer_id
        command.send.sequence_id = sequence_id
        metadata = pb.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                      publish_time=int(time.time() * 1000))
        self.sock.sendall(frame.encode_payload_command(command, metadata, payload))

    def send_entry(self, entry: bytes, producer_id: int = 1, sequence_id: int = 0,
                   num_messages: int | None = None) -> Any:
        """SEND entry (metadataSize | metadata | payload) with a valid checksum; the reply."""
        command = pb.BaseCommand(type=pb.BaseCommand.SEND)
        command.send.producer_id = producer_id
        command.send.sequence_id = sequence_id
        if num_messages is not None:
            command.send.num_messages = num_messages
        header, body = frame.payload_frame_parts(command, entry)
        self.sock.sendall(header + bytes(body))
        return self.read()

    def closed_by_peer(self) -> bool:
        try:
            while True:
                if self.sock.recv(65536) == b"":
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


@dataclasses.dataclass(kw_only=True)
class ManagedLedgerStack:
    """One broker's worth of in-process storage under root: a bookie engine, a RocksDB
    metadata store, the local ledger client and a managed-ledger factory over them."""

    root: pathlib.Path
    clock: clock.ManualClock
    storage: engine.LedgerStorageEngine
    store: rocksdb.RocksdbMetadataStore
    client: local.LocalLedgerClient
    factory: factory.ManagedLedgerFactoryImpl
    stopped: bool = False

    async def stop(self, *, clean: bool = True) -> None:
        """Stop everything; without clean, managed ledgers are abandoned as in a crash."""
        if self.stopped:
            return
        self.stopped = True
        if clean:
            await self.factory.shutdown()
        await self.client.close()
        await self.store.close()
        await self.storage.close()


async def start_managed_ledger_stack(
    root: pathlib.Path, manual_clock: clock.ManualClock, **overrides: Any
) -> ManagedLedgerStack:
    """Start a ManagedLedgerStack over root (reopening what is there); overrides are
    ManagedLedgerConfig fields on top of STACK_ML_CONFIG. No background maintenance runs."""
    # Imported here: `pulsar local-cluster` imports this module for the process launchers.
    from pulsar_bookie import config as bookie_config
    from pulsar_bookie import types as bookie_types
    from pulsar_bookie.client import local
    from pulsar_bookie.storage import engine
    from pulsar_common.metadata import rocksdb

    from pulsar_broker.managed_ledger import config as ml_config
    from pulsar_broker.managed_ledger import factory

    bookie_id = bookie_types.BookieId(STACK_BOOKIE_ID)
    storage = engine.LedgerStorageEngine(
        bookie_config.BookieConfig(
            journalDirectory=str(root / "journal"),
            ledgerDirectories=(str(root / "ledgers"),),
            bookieId=bookie_id,
            dbStorage_writeCacheMaxSizeMb=4,
            flushInterval=3600_000,
            gcWaitTime=3600_000,
        )
    )
    await storage.start()
    store = await rocksdb.RocksdbMetadataStore.open(str(root / "metadata"))
    client = local.LocalLedgerClient(storage, store, bookie_id, now_ms=manual_clock)
    managed_config = ml_config.ManagedLedgerConfig(**{**STACK_ML_CONFIG, **overrides})
    ml_factory = factory.ManagedLedgerFactoryImpl(
        store, client, managed_config, now_ms=manual_clock, maintenance_interval_s=None
    )
    return ManagedLedgerStack(root=root, clock=manual_clock, storage=storage, store=store,
                              client=client, factory=ml_factory)


class RecordingConnection:
    """A consumer's connection for in-process dispatcher tests: records what would go out
    (positions in `sent`, the frames' details in `messages`) and the ACTIVE_CONSUMER_CHANGE
    and CLOSE_CONSUMER it was asked to send. `writable` may be set False to stand for an
    outbound buffer above its high-water mark."""

    remote_address = "test"

    def __init__(self) -> None:
        self.writable = True
        self.sent: list[Any] = []
        #: (consumer id, position, redelivery count) per MESSAGE, in order.
        self.messages: list[tuple[int, Any, int]] = []
        #: The ack_set of each MESSAGE (None for an entry with nothing acknowledged yet).
        self.ack_sets: list[Any] = []
        self.active: dict[int, bool] = {}
        self.closed_consumers: list[int] = []

    def send_message(self, consumer_id: int, position: Any, redelivery_count: int,
                     data: bytes, partition: int, ack_set: Any = None) -> None:
        self.sent.append(position)
        self.messages.append((consumer_id, position, redelivery_count))
        self.ack_sets.append(ack_set)

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None:
        self.active[consumer_id] = is_active

    def send_close_consumer(self, consumer_id: int) -> None:
        self.closed_consumers.append(consumer_id)
