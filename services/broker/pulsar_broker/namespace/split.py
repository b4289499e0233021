"""Splitting a namespace bundle in two, on the broker that owns it.

The owner first takes ownership of both halves (nobody looks them up before
the boundaries change), then adds the split point to the namespace's bundle
boundaries with a compare-and-set, then gives up the parent's key. Its topics
stay loaded: this broker owns whichever half each falls into. Apache's split
keeps the halves on the owner the same way; `unload=true` then unloads them.
"""

from __future__ import annotations

import json
import logging

from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.service import NamespaceService

log = logging.getLogger(__name__)

#: Tries of the boundaries' compare-and-set against concurrent policy updates.
POLICY_UPDATE_ATTEMPTS = 5


def halves(bundle: NamespaceBundle, point: int) -> tuple[NamespaceBundle, NamespaceBundle]:
    if not bundle.lower < point < bundle.upper:
        raise errors.PreconditionFailedError(f"split point 0x{point:08x} is outside {bundle}")
    return (NamespaceBundle(bundle.namespace, bundle.lower, point),
            NamespaceBundle(bundle.namespace, point, bundle.upper, bundle.closed))


async def split(namespaces: NamespaceService, bundle: NamespaceBundle,
                point: int) -> tuple[NamespaceBundle, NamespaceBundle]:
    """Split bundle (owned here) at point; returns the two halves, both owned here."""
    if not namespaces.ownership.owns(bundle):
        raise errors.PreconditionFailedError(f"bundle {bundle} is not owned by this broker")
    children = halves(bundle, point)
    taken: list[NamespaceBundle] = []
    for child in children:
        if await namespaces.ownership.try_acquire(child) != namespaces.me:
            for done in taken:
                await namespaces.ownership.release(done)
            raise errors.ConflictError(f"another broker owns part of {bundle}")
        taken.append(child)
    try:
        await _add_boundary(namespaces, bundle, point)
    except BaseException:
        for done in taken:
            await namespaces.ownership.release(done)
        raise
    await namespaces.ownership.release(bundle)
    log.info("split bundle %s into %s and %s", bundle, children[0].range, children[1].range)
    return children


async def _add_boundary(namespaces: NamespaceService, bundle: NamespaceBundle,
                        point: int) -> None:
    path = f"{resources.POLICIES}/{bundle.namespace}"
    for _ in range(POLICY_UPDATE_ATTEMPTS):
        found = await namespaces.store.get(path)
        if found is None:
            raise errors.NotFoundError(f"Namespace {bundle.namespace} does not exist")
        policies = json.loads(found.value)
        current = [int(b, 16) for b in (policies.get("bundles") or {}).get("boundaries") or []]
        if len(current) < 2:
            current = [0, 0xFFFFFFFF]
        if bundle.lower not in current or bundle.upper not in current or any(
                bundle.lower < b < bundle.upper for b in current):
            raise errors.ConflictError(f"bundle {bundle} no longer exists")
        boundaries = sorted([*current, point])
        policies["bundles"] = {"boundaries": [f"0x{b:08x}" for b in boundaries],
                               "numBundles": len(boundaries) - 1}
        try:
            await namespaces.store.put(path, json.dumps(policies, sort_keys=True).encode(),
                                       found.stat.version)
            return
        except md_errors.BadVersionError:
            continue
    raise errors.ConflictError(f"policies of {bundle.namespace} kept changing; split abandoned")
