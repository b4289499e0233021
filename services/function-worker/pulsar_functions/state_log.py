"""A function's state as a compactable log: the records, and the table they fold into.

State (counters and values, shared by every instance of a function) lives in
a topic of its own, one message per update. The topic is compacted (the
broker keeps the latest message of each partition key), so the table is
defined on the latest record of each *compaction key* alone, and compaction
never changes what an instance reads:

- `v:<key>`, the key's **base**: a put (a value), a set (a counter) or a
  delete, each with a fresh *epoch* id and the key's next version;
- `c:<writer>:<key>`, one writer's **running total** of the increments it
  made to the key since the base of the epoch it names, and how many.

A key's counter is its base plus the totals of every writer in the base's
epoch; totals of older epochs are dead (a put, set or delete starts a new
epoch). Increments by parallel instances all count, as each writer only
replaces its own total; an increment racing a put or delete may be lost to
it. Writers (instance ids) must be distinct and contain no ':'. Pure: no
client here (instance/state.py reads and writes the topic).

Counters are kept as numbers; read as a value they are Apache's 8-byte
big-endian integers, and a value of 8 bytes reads as a counter.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

INCR = "incr"
#: Sets a counter (the admin API's putstate with a numberValue).
SET = "set"
PUT = "put"
DELETE = "del"
#: The epoch of a key that never had a base.
NO_EPOCH = ""


@dataclasses.dataclass(frozen=True)
class Update:
    """What a caller asks for: incr (amount), set (amount), put (value) or del."""

    key: str
    op: str
    amount: int = 0
    value: bytes = b""


@dataclasses.dataclass(frozen=True)
class Base:
    """The latest put, set or delete of a key."""

    key: str
    op: str
    epoch: str
    version: int
    amount: int = 0
    value: bytes = b""

    @property
    def compaction_key(self) -> str:
        return f"v:{self.key}"

    def encode(self) -> bytes:
        document: dict[str, Any] = {"op": self.op, "key": self.key, "epoch": self.epoch,
                                    "version": self.version}
        if self.op == SET:
            document["amount"] = self.amount
        elif self.op == PUT:
            document["value"] = base64.b64encode(self.value).decode()
        return json.dumps(document).encode()


@dataclasses.dataclass(frozen=True)
class Total:
    """One writer's increments of a key in one epoch."""

    key: str
    writer: str
    epoch: str
    total: int
    count: int

    @property
    def compaction_key(self) -> str:
        return f"c:{self.writer}:{self.key}"

    def encode(self) -> bytes:
        return json.dumps({"op": INCR, "key": self.key, "writer": self.writer,
                           "epoch": self.epoch, "total": self.total,
                           "count": self.count}).encode()


Record = Base | Total


def decode(payload: bytes) -> Record | None:
    """The record a state message carries; None for one this version does not know."""
    try:
        document = json.loads(payload)
        op, key, epoch = document["op"], str(document["key"]), str(document["epoch"])
        if op == INCR:
            return Total(key, str(document["writer"]), epoch, int(document["total"]),
                         int(document["count"]))
        version = int(document["version"])
        if op == SET:
            return Base(key, SET, epoch, version, amount=int(document["amount"]))
        if op == PUT:
            return Base(key, PUT, epoch, version, value=base64.b64decode(document["value"]))
        if op == DELETE:
            return Base(key, DELETE, epoch, version)
    except (ValueError, KeyError, TypeError):
        return None
    return None


@dataclasses.dataclass
class Entry:
    counter: int | None = None
    value: bytes | None = None
    version: int = 0

    def as_bytes(self) -> bytes:
        if self.value is not None:
            return self.value
        return (self.counter or 0).to_bytes(8, "big", signed=True)

    def as_counter(self) -> int:
        if self.counter is not None:
            return self.counter
        if self.value is not None and len(self.value) == 8:
            return int.from_bytes(self.value, "big", signed=True)
        return 0


class StateTable:
    """The folded state: the latest base and writer totals of every key."""

    def __init__(self) -> None:
        self._bases: dict[str, Base] = {}
        self._totals: dict[str, dict[str, Total]] = {}

    def apply(self, record: Record) -> None:
        """Take record as the latest of its compaction key."""
        if isinstance(record, Base):
            self._bases[record.key] = record
        else:
            self._totals.setdefault(record.key, {})[record.writer] = record

    def _epoch(self, key: str) -> str:
        base = self._bases.get(key)
        return NO_EPOCH if base is None else base.epoch

    def _live_totals(self, key: str) -> list[Total]:
        epoch = self._epoch(key)
        return [t for t in self._totals.get(key, {}).values() if t.epoch == epoch]

    def record_for(self, update: Update, writer: str, new_epoch: str) -> Record:
        """The record that makes update happen, written by writer; new_epoch is a fresh unique
        id, used when update replaces the key's base."""
        if update.op == INCR:
            epoch = self._epoch(update.key)
            mine = self._totals.get(update.key, {}).get(writer)
            total, count = (mine.total, mine.count) if mine and mine.epoch == epoch else (0, 0)
            return Total(update.key, writer, epoch, total + update.amount, count + 1)
        current = self.get(update.key)
        version = (current.version if current else 0) + 1
        return Base(update.key, update.op, new_epoch, version,
                    amount=update.amount if update.op == SET else 0,
                    value=update.value if update.op == PUT else b"")

    def get(self, key: str) -> Entry | None:
        base = self._bases.get(key)
        live = self._live_totals(key)
        total, count = sum(t.total for t in live), sum(t.count for t in live)
        if base is None or base.op == DELETE:
            return Entry(counter=total, version=count) if live else None
        if base.op == SET:
            return Entry(counter=base.amount + total, version=base.version + count)
        if live:
            return Entry(counter=Entry(value=base.value).as_counter() + total,
                         version=base.version + count)
        return Entry(value=base.value, version=base.version)

    def counter(self, key: str) -> int:
        entry = self.get(key)
        return 0 if entry is None else entry.as_counter()

    def value(self, key: str) -> bytes | None:
        entry = self.get(key)
        return None if entry is None else entry.as_bytes()


def function_state_json(key: str, entry: Entry) -> dict[str, Any]:
    """Apache's FunctionState JSON for one key."""
    document: dict[str, Any] = {"key": key, "version": entry.version}
    if entry.counter is not None:
        document["numberValue"] = entry.counter
        return document
    value = entry.as_bytes()
    try:
        document["stringValue"] = value.decode("utf-8")
    except UnicodeDecodeError:
        document["byteValue"] = base64.b64encode(value).decode()
    return document


def update_from_state_json(key: str, document: dict[str, Any]) -> Update:
    """The update a put of Apache's FunctionState JSON asks for."""
    if document.get("numberValue") is not None:
        return Update(key, SET, amount=int(document["numberValue"]))
    if document.get("stringValue") is not None:
        return Update(key, PUT, value=str(document["stringValue"]).encode())
    if document.get("byteValue") is not None:
        raw = document["byteValue"]
        value = base64.b64decode(raw) if isinstance(raw, str) else bytes(raw)
        return Update(key, PUT, value=value)
    raise ValueError("a state needs stringValue, byteValue or numberValue")
