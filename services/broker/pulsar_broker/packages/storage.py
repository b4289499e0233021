"""Package bytes in BookKeeper ledgers, package records in the metadata store.

Each version's content is written once, as entries of CHUNK_BYTES into a
ledger of its own (tagged `pulsar/package` with the package name), and the
ledger is closed before the record naming it is created, with a
create-if-absent put: a version is visible only once all its bytes are
durable, and two concurrent uploads of one version cannot both win (the
loser's ledger is deleted). Reads check the size and SHA-256 recorded at
upload. A delete removes the record first, then the ledger, so no record
ever names a missing ledger; a broker that dies mid-upload can leave an
unnamed ledger behind (found by its tag), never a half-visible package.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
from collections.abc import AsyncIterator, Callable

from pulsar_bookie import types
from pulsar_bookie.client import api as ledgers
from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_broker.packages import errors, names, records

log = logging.getLogger(__name__)

#: Bytes per ledger entry (well under the bookies' frame limit).
CHUNK_BYTES = 512 * 1024
#: Entries asked of the bookies per read while downloading.
READ_BATCH_ENTRIES = 8
LEDGER_TAG = "pulsar/package"
PASSWORD = b"pulsar-packages"


@dataclasses.dataclass(frozen=True)
class Replication:
    """Ensemble and quorums of package ledgers."""

    ensemble_size: int
    write_quorum: int
    ack_quorum: int


class PackageStorage:
    def __init__(self, store: metadata_api.MetadataStore, client: ledgers.LedgerClient,
                 replication: Replication, max_size_bytes: int,
                 now_ms: Callable[[], int] = clock.wall_clock_ms) -> None:
        self._store = store
        self._client = client
        self._replication = replication
        self.max_size_bytes = max_size_bytes
        self._now_ms = now_ms

    async def get(self, name: names.PackageName) -> records.StoredPackage:
        found = await self._store.get(records.record_path(name))
        if found is None:
            raise errors.PackageNotFoundError(f"Package '{name}' metadata does not exist")
        return records.StoredPackage.from_bytes(found.value)

    async def begin_upload(self, name: names.PackageName) -> PackageUpload:
        """A writer for a new version (PackageExistsError when it is already there)."""
        if await self._store.exists(records.record_path(name)):
            raise errors.PackageExistsError(f"Package '{name}' metadata already exists")
        r = self._replication
        handle = await self._client.create_ledger(
            r.ensemble_size, r.write_quorum, r.ack_quorum, {LEDGER_TAG: str(name)}, PASSWORD)
        return PackageUpload(self, name, handle)

    async def commit(self, name: names.PackageName, stored: records.StoredPackage) -> None:
        try:
            await self._store.put(records.record_path(name), stored.to_bytes(),
                                  metadata_api.VERSION_ABSENT)
        except metadata_errors.AlreadyExistsError as exc:
            raise errors.PackageExistsError(f"Package '{name}' metadata already exists") from exc

    async def read(self, name: names.PackageName) -> tuple[records.StoredPackage,
                                                             AsyncIterator[bytes]]:
        """The package's record and its content, chunk by chunk; PackageCorruptError instead
        of the last chunk when the bytes do not match the record."""
        stored = await self.get(name)
        handle = await self._client.open_ledger(types.LedgerId(stored.ledger_id),
                                                recovery=False, password=PASSWORD)
        return stored, self._chunks(name, stored, handle)

    async def _chunks(self, name: names.PackageName, stored: records.StoredPackage,
                      handle: ledgers.ReadHandle) -> AsyncIterator[bytes]:
        # The last chunk is held back until the whole content matched the record, so a
        # reader of a damaged package never receives all the bytes it was promised.
        digest = hashlib.sha256()
        size = 0
        held = b""
        try:
            last = handle.last_add_confirmed
            for first in range(0, last + 1, READ_BATCH_ENTRIES):
                entries = await handle.read(first, min(first + READ_BATCH_ENTRIES - 1, last))
                for entry in entries:
                    digest.update(entry.payload)
                    size += len(entry.payload)
                    if held:
                        yield held
                    held = entry.payload
        finally:
            await handle.close()
        if size != stored.size_bytes or digest.hexdigest() != stored.sha256:
            raise errors.PackageCorruptError(
                f"Package '{name}' does not match its checksum (ledger {stored.ledger_id})")
        if held:
            yield held

    async def update_metadata(self, name: names.PackageName,
                              metadata: records.PackageMetadata) -> None:
        """Replace the user's metadata; createTime stays, modificationTime is now."""
        path = records.record_path(name)
        found = await self._store.get(path)
        if found is None:
            raise errors.PackageNotFoundError(f"Package '{name}' metadata does not exist")
        stored = records.StoredPackage.from_bytes(found.value)
        updated = dataclasses.replace(
            stored, metadata=dataclasses.replace(
                metadata, create_time_ms=stored.metadata.create_time_ms,
                modification_time_ms=self._now_ms()))
        await self._store.put(path, updated.to_bytes(), found.stat.version)

    async def delete(self, name: names.PackageName) -> None:
        path = records.record_path(name)
        found = await self._store.get(path)
        if found is None:
            raise errors.PackageNotFoundError(f"Package '{name}' does not exist")
        stored = records.StoredPackage.from_bytes(found.value)
        await self._store.delete(path, found.stat.version)
        await self._client.delete_ledger(types.LedgerId(stored.ledger_id))

    async def versions(self, name: names.PackageName) -> list[str]:
        found = await self._store.get_children(records.versions_path(name))
        if not found:
            raise errors.PackageNotFoundError(
                f"Package '{name.type.value}://{name.tenant}/{name.namespace}/{name.name}' "
                "does not exist")
        return found

    async def names(self, type_: names.PackageType, tenant: str, namespace: str) -> list[str]:
        return await self._store.get_children(records.namespace_path(type_, tenant, namespace))

    def now_ms(self) -> int:
        return self._now_ms()

    async def discard(self, handle: ledgers.WriteHandle) -> None:
        with contextlib.suppress(Exception):
            await handle.close()
        try:
            await self._client.delete_ledger(handle.ledger_id)
        except Exception:  # Left as an orphan tagged with the package name.
            log.warning("could not delete ledger %d of an abandoned package upload",
                        handle.ledger_id, exc_info=True)


class PackageUpload:
    """One version's bytes on their way into a ledger; commit() makes it visible."""

    def __init__(self, storage: PackageStorage, name: names.PackageName,
                 handle: ledgers.WriteHandle) -> None:
        self._storage = storage
        self._name = name
        self._handle = handle
        self._pending = bytearray()
        self._digest = hashlib.sha256()
        self.size_bytes = 0

    async def write(self, data: bytes) -> None:
        self.size_bytes += len(data)
        limit = self._storage.max_size_bytes
        if self.size_bytes > limit:
            raise errors.PackageTooLargeError(
                f"Package is larger than packagesMaxSizeBytes ({limit} bytes)")
        self._digest.update(data)
        self._pending += data
        while len(self._pending) >= CHUNK_BYTES:
            await self._handle.append(bytes(self._pending[:CHUNK_BYTES]))
            del self._pending[:CHUNK_BYTES]

    async def commit(self, metadata: records.PackageMetadata) -> None:
        if self._pending:
            await self._handle.append(bytes(self._pending))
            self._pending.clear()
        await self._handle.close()
        now = self._storage.now_ms()
        stored = records.StoredPackage(
            dataclasses.replace(metadata, create_time_ms=now, modification_time_ms=0),
            int(self._handle.ledger_id), self.size_bytes, self._digest.hexdigest())
        try:
            await self._storage.commit(self._name, stored)
        except errors.PackageExistsError:
            await self._storage.discard(self._handle)
            raise

    async def abort(self) -> None:
        await self._storage.discard(self._handle)
