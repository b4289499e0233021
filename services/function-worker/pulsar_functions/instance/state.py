"""The state store of a function, kept in a topic of its own (see pulsar_functions.state_log).

On open it reads the state topic's compacted view from the start into a
table (the latest record of each compaction key up to the compaction
horizon, then every message after it), then a reader thread keeps tailing
it, so updates by other instances (and by the admin API's putstate) show
up. A write is a message on the topic, keyed by its record's compaction
key; it returns once this store's reader has applied it, so an instance
reads its own writes and everything written before them. A durable
subscription that never acknowledges keeps the broker from trimming the
topic: it is the state's only copy. State outlives instances, restarts and
moves to other workers because it is a topic, stored by the bookies like any
other; compaction (a compaction threshold on the topic or its namespace, or
`pulsar-admin topics compact`) bounds what a restart reads.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pulsar

from pulsar_functions import errors, state_log

#: The subscription whose cursor never moves, keeping every state update stored.
KEEPER_SUBSCRIPTION = "__state-keeper"
#: How long one tail read waits before looking at the stop flag again.
TAIL_POLL_MS = 200
#: How long a write waits for its own update to come back through the reader.
APPLY_TIMEOUT_S = 30.0


def _position(message_id: Any) -> tuple[int, int, int]:
    return (message_id.ledger_id(), message_id.entry_id(), message_id.batch_index())


class TopicStateStore:
    """Counters and values of one function, shared by its instances through a topic."""

    def __init__(self, client: pulsar.Client, topic: str, writer: str) -> None:
        """writer: this store's name among the function's writers of increments (the
        instance id): no two stores that increment may share one."""
        self._client = client
        self._topic = topic
        self._writer = writer
        self._writing = threading.Lock()
        self._table = state_log.StateTable()
        self._applied: tuple[int, int, int] = (-1, -1, -1)
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._producer: Any = None
        self._reader: Any = None
        self._tail: threading.Thread | None = None

    def open(self) -> None:
        try:
            self._client.subscribe(self._topic, KEEPER_SUBSCRIPTION,
                                   initial_position=pulsar.InitialPosition.Earliest).close()
            self._reader = self._client.create_reader(self._topic, pulsar.MessageId.earliest,
                                                      is_read_compacted=True)
            while self._reader.has_message_available():
                self._apply(self._reader.read_next())
            self._producer = self._client.create_producer(self._topic)
        except pulsar.PulsarException as exc:
            raise errors.StateStoreError(f"cannot open state topic {self._topic}") from exc
        self._tail = threading.Thread(target=self._tail_loop, name="state-tail", daemon=True)
        self._tail.start()

    def close(self) -> None:
        self._stopping.set()
        if self._tail is not None:
            self._tail.join(timeout=5)
        for closable in (self._producer, self._reader):
            if closable is not None:
                try:
                    closable.close()
                except pulsar.PulsarException:
                    pass

    def _tail_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                message = self._reader.read_next(timeout_millis=TAIL_POLL_MS)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                if self._stopping.is_set():
                    return
                time.sleep(TAIL_POLL_MS / 1000)
                continue
            self._apply(message)

    def _apply(self, message: Any) -> None:
        record = state_log.decode(message.data())
        with self._changed:
            if record is not None:
                self._table.apply(record)
            self._applied = max(self._applied, _position(message.message_id()))
            self._changed.notify_all()

    def write(self, update: state_log.Update) -> None:
        """Append update's record and wait until the table holds it. Writes of one store go one
        at a time: an increment's record carries this writer's total so far."""
        with self._writing:
            with self._changed:
                record = self._table.record_for(update, self._writer, uuid.uuid4().hex)
            try:
                message_id = self._producer.send(record.encode(),
                                                 partition_key=record.compaction_key)
            except pulsar.PulsarException as exc:
                raise errors.StateStoreError(f"cannot write state key {update.key}") from exc
            position = _position(message_id)
            with self._changed:
                if not self._changed.wait_for(lambda: self._applied >= position,
                                              APPLY_TIMEOUT_S):
                    raise errors.StateStoreError(
                        f"state update of {update.key} not read back in {APPLY_TIMEOUT_S}s")

    def incr(self, key: str, amount: int) -> None:
        self.write(state_log.Update(key, state_log.INCR, amount=int(amount)))

    def put(self, key: str, value: bytes) -> None:
        self.write(state_log.Update(key, state_log.PUT, value=value))

    def delete(self, key: str) -> None:
        self.write(state_log.Update(key, state_log.DELETE))

    def counter(self, key: str) -> int:
        with self._changed:
            return self._table.counter(key)

    def value(self, key: str) -> bytes | None:
        with self._changed:
            return self._table.value(key)

    def entry(self, key: str) -> state_log.Entry | None:
        with self._changed:
            return self._table.get(key)
