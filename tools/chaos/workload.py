"""The chaos run's workload: what users do with the cluster while the nemesis attacks it.

Keyed producers on topics with deduplication on and off, consumers of every acknowledging
subscription type (Exclusive, Shared, Key_Shared), and readers, all with the official
client through the proxy. Each thread records what it was told: the producers every
value acknowledged to them (and when), the consumers what they acknowledged. The
checker compares that with what the topics hold at the end.

A value is ``<key>:<n>`` with n counting up per key. A producer retries a failed send
with the same value and the same sequence id until it is acknowledged, as an
application that must not lose data does; with deduplication those retries must not
be stored twice.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import threading
import time
from collections.abc import Callable

import pulsar

#: Keys per producer.
KEYS = 6
#: The producers' send timeout: a send to a cluster in trouble fails after this and is retried.
SEND_TIMEOUT_MS = 10_000
#: Pause between attempts of read_back while the cluster settles after the last fault.
READ_BACK_RETRY_S = 1.0
#: Subscriptions on each topic: name and type.
SUBSCRIPTIONS = (
    ("exclusive", pulsar.ConsumerType.Exclusive),
    ("shared", pulsar.ConsumerType.Shared),
    ("key-shared", pulsar.ConsumerType.KeyShared),
)


@dataclasses.dataclass(frozen=True)
class TopicPlan:
    name: str
    deduplication: bool


@dataclasses.dataclass
class Acked:
    """One value whose send was acknowledged: key, counter and when (monotonic seconds)."""

    key: str
    n: int
    at_s: float
    message_id: str


@dataclasses.dataclass
class History:
    """Everything the workload threads were told, guarded by one lock."""

    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    acked: dict[str, list[Acked]] = dataclasses.field(default_factory=dict)
    send_failures: dict[str, int] = dataclasses.field(default_factory=dict)
    consumed: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    read: dict[str, int] = dataclasses.field(default_factory=dict)
    errors: list[str] = dataclasses.field(default_factory=list)

    def add_acked(self, topic: str, key: str, n: int, message_id: str) -> None:
        with self.lock:
            self.acked.setdefault(topic, []).append(Acked(key, n, time.monotonic(), message_id))

    def count(self, table: dict[str, int], name: str) -> None:
        with self.lock:
            table[name] = table.get(name, 0) + 1

    def count_consumed(self, topic: str, subscription: str) -> None:
        with self.lock:
            self.consumed[(topic, subscription)] = self.consumed.get((topic, subscription), 0) + 1

    def success_times(self) -> list[float]:
        with self.lock:
            return sorted(a.at_s for acked in self.acked.values() for a in acked)

    def last_success_s(self, topic: str) -> float:
        with self.lock:
            acked = self.acked.get(topic)
            return acked[-1].at_s if acked else 0.0


def encode(key: str, n: int) -> bytes:
    return f"{key}:{n}".encode()


def decode(data: bytes) -> tuple[str, int]:
    key, _, n = data.decode().rpartition(":")
    return key, int(n)


class Workload:
    """Producer, consumer and reader threads on every planned topic until stop()."""

    def __init__(self, service_url: str, topics: list[TopicPlan], log_dir: pathlib.Path,
                 publish_interval_s: float = 0.005) -> None:
        self.service_url = service_url
        self.topics = topics
        self.history = History()
        self.publish_interval_s = publish_interval_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        log_dir.mkdir(parents=True, exist_ok=True)
        self.client = pulsar.Client(
            service_url, operation_timeout_seconds=30,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(log_dir / "client.log")))

    def start(self) -> None:
        for plan in self.topics:
            self._spawn(f"produce {plan.name}", functools.partial(self._produce, plan))
            for name, kind in SUBSCRIPTIONS:
                copies = 1 if kind == pulsar.ConsumerType.Exclusive else 2
                for i in range(copies):
                    self._spawn(f"consume {plan.name} {name} {i}",
                                functools.partial(self._consume, plan, name, kind))
            self._spawn(f"read {plan.name}", functools.partial(self._read, plan))

    def subscribe_all(self) -> None:
        """Create every durable subscription before the first publish, so that each one's
        backlog is the whole topic."""
        for plan in self.topics:
            for name, kind in SUBSCRIPTIONS:
                self.client.subscribe(plan.name, name, consumer_type=kind,
                                      initial_position=pulsar.InitialPosition.Earliest).close()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(SEND_TIMEOUT_MS / 1000 + 30)
        try:
            self.client.close()
        except pulsar.PulsarException:
            pass  # A client whose broker just died says NotConnected; nothing is lost by it.

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except Exception as exc:  # recorded: the report shows a workload that broke
                with self.history.lock:
                    self.history.errors.append(f"{name}: {exc!r}")

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _produce(self, plan: TopicPlan) -> None:
        producer = None
        sequence_id = 0
        counters = dict.fromkeys((f"k{i}" for i in range(KEYS)), 0)
        keys = sorted(counters)
        while not self._stop.is_set():
            key = keys[sequence_id % len(keys)]
            value = encode(key, counters[key])
            while not self._stop.is_set():
                try:
                    if producer is None:
                        producer = self.client.create_producer(
                            plan.name, producer_name=f"chaos-{plan.name.rsplit('/', 1)[-1]}",
                            send_timeout_millis=SEND_TIMEOUT_MS, batching_enabled=False)
                    sent = producer.send(value, partition_key=key, sequence_id=sequence_id)
                except pulsar.PulsarException:
                    self.history.count(self.history.send_failures, plan.name)
                    if producer is not None and not producer.is_connected():
                        _close_quietly(producer)
                        producer = None
                    self._stop.wait(0.2)
                    continue
                self.history.add_acked(plan.name, key, counters[key],
                                       f"{sent.ledger_id()}:{sent.entry_id()}")
                counters[key] += 1
                sequence_id += 1
                break
            self._stop.wait(self.publish_interval_s)
        if producer is not None:
            _close_quietly(producer)

    def _consume(self, plan: TopicPlan, subscription: str, kind: pulsar.ConsumerType) -> None:
        consumer = None
        while not self._stop.is_set():
            try:
                if consumer is None:
                    consumer = self.client.subscribe(
                        plan.name, subscription, consumer_type=kind, receiver_queue_size=100,
                        initial_position=pulsar.InitialPosition.Earliest)
                message = consumer.receive(timeout_millis=500)
                consumer.acknowledge(message)
                self.history.count_consumed(plan.name, subscription)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                self._stop.wait(0.2)
        if consumer is not None:
            _close_quietly(consumer)

    def _read(self, plan: TopicPlan) -> None:
        reader = None
        while not self._stop.is_set():
            try:
                if reader is None:
                    reader = self.client.create_reader(plan.name, pulsar.MessageId.earliest)
                reader.read_next(timeout_millis=500)
                self.history.count(self.history.read, plan.name)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                self._stop.wait(0.2)
        if reader is not None:
            _close_quietly(reader)


def _close_quietly(closable: pulsar.Producer | pulsar.Consumer | pulsar.Reader) -> None:
    try:
        closable.close()
    except pulsar.PulsarException:
        pass


def read_back(service_url: str, topic: str, timeout_s: float = 120.0) -> list[tuple[str, int]]:
    """Every value stored on topic, in order, read from the earliest by a fresh client;
    retried while the cluster settles after the last fault."""
    deadline = time.monotonic() + timeout_s
    while True:
        client = pulsar.Client(service_url, operation_timeout_seconds=30,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            found = []
            while reader.has_message_available():
                found.append(decode(reader.read_next(30_000).data()))
            return found
        except pulsar.PulsarException:
            if time.monotonic() > deadline:
                raise
        finally:
            try:
                client.close()
            except pulsar.PulsarException:
                pass
        time.sleep(READ_BACK_RETRY_S)
