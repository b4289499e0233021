"""A Watch on etcd that survives broken streams without missing a change.

A pump task reads aetcd's watch stream and feeds a QueueWatch. When the
stream breaks (etcd restarted, connection lost) the pump opens a new one
starting at the revision after the last event it delivered, so nothing is
skipped. If etcd has compacted that history away, the watch ends with
WatchLostError: the consumer must re-read and watch again.

The first stream starts right after the newest revision the store had seen
when watch() was called, so every change made after that call is delivered
(a change made shortly before it may be delivered too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aetcd

from pulsar_common import backoff
from pulsar_common.metadata import api, errors, etcd_kv, paths, tasks, watches

log = logging.getLogger(__name__)

#: Pauses between attempts to re-open a broken watch stream: short at first (etcd's
#: leader moved), at most a second (etcd is down), back to short once a stream opens.
RECONNECT_BACKOFF = backoff.BackoffPolicy(first_s=0.05, max_s=1.0)
#: How long stop() waits for the pump to end.
STOP_TIMEOUT_S = 15.0


class EtcdWatch:
    """Runs the pump for one QueueWatch; stop() ends it."""

    def __init__(self, client: aetcd.Client, chroot: paths.Chroot, queue: watches.QueueWatch,
                 start_revision: int) -> None:
        self._client = client
        self._chroot = chroot
        self._queue = queue
        self._key_text = chroot.key(queue.path).decode()
        self._next_revision = start_revision
        self._stream: Any = None
        self._creating = False
        self._stopping = False
        self._task = asyncio.create_task(self._pump(), name=f"etcd-watch {queue.path}")

    def _range(self) -> tuple[bytes, bytes | None]:
        key = self._key_text.encode()
        if not self._queue.prefix:
            return key, None
        return key, etcd_kv.prefix_end(paths.children_prefix(self._key_text).encode())

    async def _pump(self) -> None:
        delays = RECONNECT_BACKOFF.start()
        key, range_end = self._range()
        while not self._stopping:
            try:
                self._creating = True
                try:
                    stream = await self._client.watch(
                        key, range_end=range_end, start_revision=self._next_revision)
                finally:
                    self._creating = False
                if self._stopping:
                    await stream.cancel()
                    return
                self._stream = stream
                delays.reset()
                async for event in stream:
                    self._deliver(event)
                if self._stopping:
                    return
            except aetcd.RevisionCompactedError as exc:
                self._queue.fail(errors.WatchLostError(
                    f"watch on {self._queue.path}: history compacted at {exc.compacted_revision}"))
                return
            except (TimeoutError, aetcd.ClientError) as exc:
                log.debug("etcd watch on %s broke (%s); re-opening", self._queue.path, exc)
            self._stream = None
            await asyncio.sleep(delays.next_delay())

    def _deliver(self, event: Any) -> None:
        self._next_revision = int(event.kv.mod_revision) + 1
        key_text = event.kv.key.decode()
        if not paths.in_scope(self._key_text, key_text, self._queue.prefix):
            return  # a key like "/a-b" lies in the range of "/a/" but not below "/a"
        path = self._chroot.path(event.kv.key)
        if path is None:
            return
        if event.kind == "DELETE":
            kind = api.NotificationType.DELETED
        elif event.kv.version == 1:
            kind = api.NotificationType.CREATED
        else:
            kind = api.NotificationType.MODIFIED
        self._queue.offer(api.Notification(kind, path))

    async def stop(self) -> None:
        """End the pump. A watch create in flight is never interrupted: aetcd pairs
        create responses with requests by order, so cancelling one would hand its
        response to the next watch created on the client."""
        self._stopping = True
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(aetcd.ClientError, asyncio.TimeoutError):
                await asyncio.wait_for(stream.cancel(), STOP_TIMEOUT_S)
        elif not self._creating:
            self._task.cancel()  # sleeping between attempts
        await tasks.wait_quietly(self._task, STOP_TIMEOUT_S)
        if not self._task.done():
            log.warning("etcd watch on %s did not stop in time", self._queue.path)
            self._task.cancel()
