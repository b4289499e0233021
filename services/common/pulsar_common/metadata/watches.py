"""In-process delivery of watch notifications and session events, shared by the backends.

A backend pushes notifications into a QueueWatch; the consumer iterates it.
The queue has a limit: a consumer that falls that far behind gets
WatchLostError from its iteration (it must re-read and watch again) instead of
an unbounded queue or silently dropped notifications.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable

from pulsar_common.metadata import api, errors

log = logging.getLogger(__name__)

#: Notifications a watch holds for a consumer that has not read them yet.
WATCH_PENDING_MAX = 10_000


class QueueWatch:
    """A Watch fed by its backend through offer(); ends on close() or fail()."""

    def __init__(
        self,
        path: str,
        prefix: bool,
        on_close: Callable[[QueueWatch], Awaitable[None]] | None = None,
        pending_max: int = WATCH_PENDING_MAX,
    ) -> None:
        if pending_max < 1:
            raise ValueError("pending_max must be at least 1")
        self.path = path
        self.prefix = prefix
        self._pending: collections.deque[api.Notification] = collections.deque()
        self._pending_max = pending_max
        self._wakeup = asyncio.Event()
        self._ended = False
        self._error: errors.MetadataStoreError | None = None
        self._on_close = on_close

    @property
    def ended(self) -> bool:
        return self._ended

    def offer(self, notification: api.Notification) -> None:
        """Queue a notification (on the event loop's thread)."""
        if self._ended:
            return
        if len(self._pending) >= self._pending_max:
            self.fail(errors.WatchLostError(
                f"watch on {self.path} fell {self._pending_max} notifications behind"))
            return
        self._pending.append(notification)
        self._wakeup.set()

    def fail(self, error: errors.MetadataStoreError) -> None:
        """End the watch: the consumer reads what is queued, then gets error."""
        if not self._ended:
            self._error = error
            self._end()

    def _end(self) -> None:
        self._ended = True
        self._wakeup.set()

    def __aiter__(self) -> QueueWatch:
        return self

    async def __anext__(self) -> api.Notification:
        while not self._pending:
            if self._ended:
                if self._error is not None:
                    raise self._error
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._pending.popleft()

    async def close(self) -> None:
        """Stop the watch; iteration ends after nothing more (pending ones are dropped)."""
        if self._ended and not self._pending and self._on_close is None:
            return
        self._pending.clear()
        self._error = None
        self._end()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            await on_close(self)


class SessionListeners:
    """The listeners registered on one store; a failing listener does not stop the others."""

    def __init__(self) -> None:
        self._listeners: list[api.SessionListener] = []

    def add(self, listener: api.SessionListener) -> None:
        self._listeners.append(listener)

    def emit(self, event: api.SessionEvent) -> None:
        log.info("metadata store session event: %s", event.value)
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("metadata session listener failed on %s", event.value)
