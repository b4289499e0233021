"""The schema registry: versions of a topic's schema, added only when compatible.

Versions count 0, 1, 2... per topic and are never reused. Deleting a schema
adds a deleted mark (a version without definition): later schemas are checked
only against what follows the mark, as Apache does; `force` removes the
history altogether (versions start again at 0).
"""

from __future__ import annotations

from pulsar_common import clock, naming
from pulsar_common.metadata import api as md

from pulsar_broker.schema import compatibility, errors, records, storage

History = storage.History


def live(history: History) -> History:
    """The versions after the last deleted mark."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].deleted:
            return history[index + 1:]
    return history


def version_of(history: History, schema: records.SchemaData) -> int | None:
    """The live version equal to `schema`, if any."""
    for stored in live(history):
        if compatibility.same_schema(stored.schema, schema):
            return stored.version
    return None


def latest(history: History) -> records.StoredSchema | None:
    return history[-1] if history else None


class SchemaRegistry:
    def __init__(self, store: md.MetadataStore, *,
                 now_ms: clock.NowMs = clock.wall_clock_ms) -> None:
        self.storage = storage.SchemaStorage(store)
        self._now_ms = now_ms

    async def history(self, topic: naming.TopicName) -> History:
        return await self.storage.read(topic)

    async def get(self, topic: naming.TopicName, version: int | None = None
                  ) -> records.StoredSchema | None:
        """The given version, or the latest (which may be a deleted mark)."""
        history = await self.storage.read(topic)
        if version is None:
            return latest(history)
        return next((s for s in history if s.version == version), None)

    async def has_schema(self, topic: naming.TopicName) -> bool:
        found = await self.get(topic)
        return found is not None and not found.deleted

    async def put_if_absent(self, topic: naming.TopicName, schema: records.SchemaData,
                            strategy: str) -> int:
        """The version of `schema`: an existing equal one, else a new version when the
        strategy allows it (IncompatibleSchemaError otherwise)."""
        compatibility.validate(schema)
        chosen: list[int] = []

        def change(history: History) -> History | None:
            existing = version_of(history, schema)
            if existing is not None:
                chosen.append(existing)
                return None
            compatibility.check([s.schema for s in live(history)], schema, strategy)
            version = history[-1].version + 1 if history else 0
            chosen.append(version)
            return history + (records.StoredSchema(version, schema, self._now_ms()),)

        await self.storage.update(topic, change)
        return chosen[-1]

    async def existing_version(self, topic: naming.TopicName, schema: records.SchemaData
                               ) -> int | None:
        return version_of(await self.storage.read(topic), schema)

    async def check_compatible(self, topic: naming.TopicName, schema: records.SchemaData,
                               strategy: str) -> None:
        """Raise IncompatibleSchemaError when `schema` could not be added."""
        compatibility.validate(schema)
        history = await self.storage.read(topic)
        if version_of(history, schema) is None:
            compatibility.check([s.schema for s in live(history)], schema, strategy)

    async def check_consumer(self, topic: naming.TopicName, schema: records.SchemaData,
                             strategy: str) -> None:
        """A consumer's schema must read what the topic's schema wrote: BACKWARD against the
        latest for the non-transitive strategies (and FORWARD_TRANSITIVE), against every
        live version for the others, as Apache checks consumers."""
        if strategy == "ALWAYS_COMPATIBLE":
            return
        history = live(await self.storage.read(topic))
        if not history:
            raise errors.IncompatibleSchemaError("Topic does not have schema to check")
        if version_of(history, schema) is not None:
            return
        if strategy in ("BACKWARD", "FORWARD", "FORWARD_TRANSITIVE", "FULL"):
            compatibility.check([history[-1].schema], schema, "BACKWARD")
        else:
            compatibility.check([s.schema for s in history], schema, strategy)

    async def delete(self, topic: naming.TopicName, force: bool = False) -> int | None:
        """Mark the schema deleted (the mark's version), or remove the history when forced.
        None when there was nothing to delete."""
        if force:
            had = bool(await self.storage.read(topic))
            await self.storage.remove(topic)
            return 0 if had else None
        marked: list[int] = []

        def change(history: History) -> History | None:
            if not history or history[-1].deleted:
                return None
            version = history[-1].version + 1
            marked.append(version)
            mark = records.StoredSchema(version, records.SchemaData("NONE", b""),
                                        self._now_ms(), deleted=True)
            return history + (mark,)

        await self.storage.update(topic, change)
        return marked[-1] if marked else None
