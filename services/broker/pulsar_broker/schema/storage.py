"""A topic's schema history in the metadata store, one JSON record per topic.

Apache keeps schema definitions in BookKeeper ledgers indexed from the
metadata store; schemas are small and rarely change, so we keep the whole
history of a topic in one record at `/schemas/<tenant>/<namespace>/<topic>`
(the partitioned topic's name for its partitions), written by compare-and-set
so two brokers registering at once cannot both take the same version.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker.schema import errors, records

ROOT = "/schemas"
#: Largest history record accepted (etcd refuses values above ~1.5 MB).
MAX_RECORD_BYTES = 1024 * 1024
#: Compare-and-set attempts before a concurrent writer is reported as a conflict.
MAX_ATTEMPTS = 16

History = tuple[records.StoredSchema, ...]


def schema_id(topic: naming.TopicName) -> str:
    """Schemas belong to the partitioned topic; the domain is not part of the id."""
    base = topic.partitioned_topic_name
    return f"{base.tenant}/{base.namespace}/{base.local_name}"


class SchemaStorage:
    def __init__(self, store: md.MetadataStore) -> None:
        self.store = store

    @staticmethod
    def path(topic: naming.TopicName) -> str:
        return f"{ROOT}/{schema_id(topic)}"

    async def read(self, topic: naming.TopicName) -> History:
        return (await self._read(self.path(topic)))[0]

    async def _read(self, path: str) -> tuple[History, int]:
        found = await self.store.get(path)
        if found is None:
            return (), md.VERSION_ABSENT
        value = json.loads(found.value)
        return tuple(records.from_json(v) for v in value["versions"]), found.stat.version

    async def update(self, topic: naming.TopicName,
                     change: Callable[[History], History | None]) -> History:
        """Apply `change` to the current history and store the result by compare-and-set,
        retrying on a concurrent write. `change` returns None to leave the record alone
        (it may also raise to refuse)."""
        path = self.path(topic)
        for _ in range(MAX_ATTEMPTS):
            current, version = await self._read(path)
            changed = change(current)
            if changed is None:
                return current
            raw = json.dumps({"versions": [records.to_json(s) for s in changed]}).encode()
            if len(raw) > MAX_RECORD_BYTES:
                raise errors.InvalidSchemaDefinitionError(
                    f"Schema history of {schema_id(topic)} would exceed {MAX_RECORD_BYTES} bytes")
            try:
                await self.store.put(path, raw, version)
            except md_errors.BadVersionError:
                continue
            return changed
        raise errors.SchemaConflictError(f"Schema of {schema_id(topic)} is changing concurrently")

    async def remove(self, topic: naming.TopicName) -> None:
        try:
            await self.store.delete(self.path(topic))
        except md_errors.NotFoundError:
            pass
