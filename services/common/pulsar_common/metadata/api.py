"""The MetadataStore contract every backend implements and every service uses.

Keys are '/'-separated paths ("/admin/clusters/standalone"). Values are bytes
(JSON by convention). Each key carries a version that starts at 0 when the key
is created and grows by one on each put, so callers can compare-and-set.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

#: expected_version for put(): the key must not exist yet (create-if-absent).
VERSION_ABSENT = -1


@dataclass(frozen=True)
class Stat:
    """What the store knows about one key besides its value."""

    path: str
    version: int
    creation_ms: int
    modification_ms: int
    ephemeral: bool = False


@dataclass(frozen=True)
class GetResult:
    value: bytes
    stat: Stat


class NotificationType(enum.Enum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True)
class Notification:
    type: NotificationType
    path: str


class SessionEvent(enum.Enum):
    """Changes of the store session that ephemeral keys and leaderships are bound to."""

    CONNECTION_LOST = "connection_lost"
    RECONNECTED = "reconnected"
    SESSION_LOST = "session_lost"
    SESSION_REESTABLISHED = "session_reestablished"


SessionListener = Callable[[SessionEvent], None]


class Watch(Protocol):
    """An open watch on a key or a prefix; iterate it for notifications, close it when done.

    Every change committed after watch() returned is delivered, in commit
    order (the etcd backend may also deliver a few changes from just before
    the call: treat notifications as hints to re-read). Iteration ends when
    the watch or its store is closed; it raises WatchLostError when
    notifications were missed (a consumer far behind, compacted history).
    """

    def __aiter__(self) -> AsyncIterator[Notification]: ...

    async def close(self) -> None: ...


class LeaderElection(Protocol):
    """Leadership of one path: at most one live session holds it at a time."""

    @property
    def is_leader(self) -> bool: ...

    async def acquire(self, value: bytes, timeout_s: float | None = None) -> bool:
        """Wait (up to timeout_s, forever when None) to become leader; False on timeout."""

    async def leader_value(self) -> bytes | None:
        """The value the current leader published, None when nobody leads."""

    async def release(self) -> None: ...


class MetadataStore(Protocol):
    """Async key/value store with versions, watches, ephemeral keys and leader election."""

    async def get(self, path: str) -> GetResult | None:
        """The value and stat of path, or None when it does not exist."""

    async def exists(self, path: str) -> bool: ...

    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> Stat:
        """Write value at path.

        expected_version None writes unconditionally; VERSION_ABSENT (-1) creates
        only when absent (AlreadyExistsError otherwise); a version >= 0 writes
        only when the key has exactly that version (BadVersionError otherwise,
        NotFoundError when the key is gone). An ephemeral key is bound to this
        store's session and vanishes when the session ends.
        """

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        """Remove path; NotFoundError when absent, BadVersionError on a version mismatch."""

    async def delete_recursive(self, path: str) -> None:
        """Remove path and every key below it; absent keys are not an error."""

    async def get_children(self, path: str) -> list[str]:
        """Names (last path segment) of the direct children of path, sorted.

        A child exists when any key lies below it ("/a/b/c" makes "b" a child of
        "/a" even when "/a/b" itself has no value).
        """

    def watch(self, path: str, *, prefix: bool = False) -> Watch:
        """Notifications for path, or for path and every key below it when prefix is set
        ("/a" covers "/a" and "/a/b/c", not "/ab")."""

    def register_session_listener(self, listener: SessionListener) -> None:
        """Be told when the session that owns this store's ephemeral keys changes.

        After SESSION_LOST the store's ephemeral keys are gone and ephemeral puts
        raise SessionLostError until SESSION_REESTABLISHED (a new session; the old
        keys are not re-created). close() emits nothing.
        """

    def leader_election(self, path: str) -> LeaderElection: ...

    async def next_id(self, path: str) -> int:
        """A unique, increasing id from the counter at path (ledger ids, for example).

        The first id is 0; the counter key holds the last id handed out as decimal
        text. Never delete a counter key: ids would start again at 0.
        """

    async def close(self) -> None:
        """Release the session: ephemeral keys and leaderships of this store vanish."""
