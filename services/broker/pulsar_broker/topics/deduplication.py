"""Message deduplication: a producer's resent messages are stored once.

Each producer name has a highest sequence id pushed (sent to the ledger) and
a highest persisted (acknowledged by the ledger). A SEND whose sequence id is
not above the persisted one is a duplicate: it is acknowledged with message id
(-1, -1), as Apache's broker does, and not stored. One above the persisted id
but not above the pushed one resends a message whose first add has not
completed yet: whether it is a duplicate is not known until that add ends (it
may still fail), so it is refused, not acknowledged, and the client resends it
later (Apache answers it with a send error too). When a publish fails, the
pushed ids fall back to the persisted ones, since the client will resend.

The persisted ids survive restarts as the properties of a cursor named
`pulsar.dedup`, snapshotted every SNAPSHOT_INTERVAL_ENTRIES entries; on load,
the entries after the snapshot are replayed to bring the ids up to date.
"""

from __future__ import annotations

import asyncio
import enum
import logging

from pulsar_common.wire import entry_info
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml

log = logging.getLogger(__name__)

CURSOR_NAME = "pulsar.dedup"
SNAPSHOT_INTERVAL_ENTRIES = 1000
REPLAY_BATCH = 500
#: The message id of a duplicate's receipt.
DUPLICATE = ml.Position(-1, -1)


def is_partial_chunk(metadata: pb.MessageMetadata) -> bool:
    """Whether the entry is a chunk of a chunked message other than its last one.

    Every chunk of a message carries the message's sequence id; only the last chunk is
    checked against and recorded as the producer's sequence id, so the chunks before
    it are neither taken for duplicates of each other nor count as the message stored."""
    return (metadata.HasField("chunk_id") and metadata.HasField("num_chunks_from_msg")
            and metadata.chunk_id < metadata.num_chunks_from_msg - 1)


class DuplicateUnknownError(errors.BrokerError):
    """A resent SEND whose first add has not completed: it cannot be answered yet."""

    retriable = True


class Status(enum.Enum):
    """What a SEND is, seen against the sequence ids already pushed and persisted."""

    #: Above every id pushed: to be stored.
    NOT_DUPLICATE = "not-duplicate"
    #: At or below the highest persisted id: acknowledged as a duplicate, not stored.
    DUPLICATE = "duplicate"
    #: Pushed but not persisted yet: its first add may still fail, so the SEND is refused.
    UNKNOWN = "unknown"


class MessageDeduplication:
    def __init__(self, ledger: ml.ManagedLedger) -> None:
        self._ledger = ledger
        self._cursor: ml.ManagedCursor | None = None
        self.highest_pushed: dict[str, int] = {}
        self.highest_persisted: dict[str, int] = {}
        self._since_snapshot = 0
        self._snapshot: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Open the snapshot cursor and replay the entries written after it."""
        cursor = await self._ledger.open_cursor(CURSOR_NAME, ml.InitialPosition.EARLIEST)
        self._cursor = cursor
        self.highest_persisted.update(cursor.properties)
        replayed = 0
        while cursor.has_more_entries():
            entries = await cursor.read_entries(REPLAY_BATCH)
            if not entries:
                break
            for entry in entries:
                metadata = entry_info.parse_metadata(entry.data)
                if is_partial_chunk(metadata):
                    continue  # only a chunked message's last chunk says it was stored whole
                count = (metadata.num_messages_in_batch
                         if metadata.HasField("num_messages_in_batch") else 1)
                top = max(metadata.sequence_id + count - 1, metadata.highest_sequence_id)
                name = metadata.producer_name
                self.highest_persisted[name] = max(self.highest_persisted.get(name, -1), top)
            replayed += len(entries)
        self.highest_pushed = dict(self.highest_persisted)
        log.info("deduplication for %s: %d producers, %d entries replayed", self._ledger.name,
                 len(self.highest_persisted), replayed)

    def last_sequence_id(self, producer_name: str) -> int:
        """What a (re)connecting producer of this name is told it last sent."""
        return self.highest_pushed.get(producer_name, -1)

    def check(self, producer_name: str, sequence_id: int, highest_sequence_id: int) -> Status:
        """Classify a SEND; one that is not a duplicate is recorded as pushed."""
        if sequence_id <= self.highest_persisted.get(producer_name, -1):
            return Status.DUPLICATE
        if sequence_id <= self.highest_pushed.get(producer_name, -1):
            return Status.UNKNOWN
        self.highest_pushed[producer_name] = max(sequence_id, highest_sequence_id)
        return Status.NOT_DUPLICATE

    def persisted(self, producer_name: str, sequence_id: int, highest_sequence_id: int,
                  position: ml.Position) -> None:
        top = max(sequence_id, highest_sequence_id)
        if top > self.highest_persisted.get(producer_name, -1):
            self.highest_persisted[producer_name] = top
        self._since_snapshot += 1
        if (self._since_snapshot >= SNAPSHOT_INTERVAL_ENTRIES and self._cursor is not None
                and (self._snapshot is None or self._snapshot.done())):
            self._since_snapshot = 0
            self._snapshot = asyncio.get_running_loop().create_task(
                self._take_snapshot(position, dict(self.highest_persisted)))

    async def _take_snapshot(self, position: ml.Position, ids: dict[str, int]) -> None:
        assert self._cursor is not None
        try:
            await self._cursor.mark_delete(position, ids)
        except Exception as exc:  # noqa: BLE001 - the next snapshot, or the replay, covers it
            log.warning("deduplication snapshot of %s failed: %s", self._ledger.name, exc)

    def publish_failed(self) -> None:
        """The client resends what failed: only what is persisted counts as seen."""
        self.highest_pushed = dict(self.highest_persisted)
