"""A function's state as a log of updates: the records and the table they fold into.

State (counters and values, shared by every instance of a function) lives in
a topic of its own, one message per update, keyed by the state key: an
increment carries its amount, a put the new value, a delete nothing. Folding
the topic from its start gives the table; increments commute, so instances
that count at the same time never lose each other's updates, and puts are
ordered by the topic. Pure: no client here (instance/state.py and the
worker's state endpoints read and write the topic).

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


@dataclasses.dataclass(frozen=True)
class Update:
    key: str
    op: str
    amount: int = 0
    value: bytes = b""

    def encode(self) -> bytes:
        document: dict[str, Any] = {"op": self.op}
        if self.op in (INCR, SET):
            document["amount"] = self.amount
        elif self.op == PUT:
            document["value"] = base64.b64encode(self.value).decode()
        return json.dumps(document).encode()


def decode(key: str, payload: bytes) -> Update | None:
    """The update a state message carries; None for one this version does not know."""
    try:
        document = json.loads(payload)
        op = document["op"]
        if op in (INCR, SET):
            return Update(key, op, amount=int(document["amount"]))
        if op == PUT:
            return Update(key, PUT, value=base64.b64decode(document["value"]))
        if op == DELETE:
            return Update(key, DELETE)
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
    """The folded state: key -> Entry."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}

    def apply(self, update: Update) -> None:
        if update.op == DELETE:
            self._entries.pop(update.key, None)
            return
        entry = self._entries.setdefault(update.key, Entry())
        entry.version += 1
        if update.op in (INCR, SET):
            base = entry.as_counter() if update.op == INCR else 0
            entry.counter = base + update.amount
            entry.value = None
        else:
            entry.value = update.value
            entry.counter = None

    def get(self, key: str) -> Entry | None:
        return self._entries.get(key)

    def counter(self, key: str) -> int:
        entry = self._entries.get(key)
        return 0 if entry is None else entry.as_counter()

    def value(self, key: str) -> bytes | None:
        entry = self._entries.get(key)
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
