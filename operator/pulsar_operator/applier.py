"""Carries out a Plan's Kubernetes part: create what is missing, patch what differs.

Objects are applied concurrently (at most APPLY_CONCURRENCY_MAX requests in
flight). Deletions touch only objects our labels say we manage, so a
same-named object somebody else made is never removed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Protocol

from pulsar_operator import diffing, errors, naming
from pulsar_operator.plan import ObjectRef

APPLY_CONCURRENCY_MAX = 8


class ObjectStore(Protocol):
    async def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...
    async def create(self, obj: dict[str, Any]) -> dict[str, Any]: ...
    async def patch(self, ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]: ...
    async def delete(self, ref: ObjectRef) -> bool: ...


@dataclasses.dataclass
class ApplyResult:
    created: list[ObjectRef] = dataclasses.field(default_factory=list)
    patched: list[ObjectRef] = dataclasses.field(default_factory=list)
    deleted: list[ObjectRef] = dataclasses.field(default_factory=list)
    unchanged: list[ObjectRef] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created or self.patched or self.deleted)


async def _apply_one(store: ObjectStore, obj: dict[str, Any], result: ApplyResult) -> None:
    ref = ObjectRef.of(obj)
    live = await store.get(ref)
    if live is None:
        try:
            await store.create(obj)
            result.created.append(ref)
            return
        except errors.KubeApiError as exc:
            # A concurrent reconcile (a timer next to a change handler) created it first.
            live = await store.get(ref) if exc.status == 409 else None
            if live is None:
                raise
    patch = diffing.merge_patch(obj, live)
    if patch is None:
        result.unchanged.append(ref)
    else:
        await store.patch(ref, patch)
        result.patched.append(ref)


async def _delete_one(store: ObjectStore, ref: ObjectRef, result: ApplyResult) -> None:
    live = await store.get(ref)
    managed = ((live or {}).get("metadata") or {}).get("labels", {}).get("app.kubernetes.io/managed-by")
    if live is not None and managed == naming.MANAGED_BY and await store.delete(ref):
        result.deleted.append(ref)


async def apply(
    store: ObjectStore, objects: tuple[dict[str, Any], ...], deletions: tuple[ObjectRef, ...] = ()
) -> ApplyResult:
    result = ApplyResult()
    limit = asyncio.Semaphore(APPLY_CONCURRENCY_MAX)

    async def guarded(coro: Any) -> None:
        async with limit:
            await coro

    outcomes = await asyncio.gather(
        *(guarded(_apply_one(store, obj, result)) for obj in objects),
        *(guarded(_delete_one(store, ref, result)) for ref in deletions),
        return_exceptions=True,  # let every write finish before reporting the first failure
    )
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    if failures:
        raise failures[0]
    return result
