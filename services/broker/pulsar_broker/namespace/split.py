"""Splitting a namespace bundle, on the broker that owns it.

The owner first takes ownership of every piece (nobody looks them up before
the boundaries change), then adds the split points to the namespace's bundle
boundaries with a compare-and-set, then gives up the parent's key. Its topics
stay loaded: this broker owns whichever piece each falls into. Apache's split
keeps the pieces on the owner the same way; `unload=true` then unloads them.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence

from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.service import NamespaceService

log = logging.getLogger(__name__)

#: Tries of the boundaries' compare-and-set against concurrent policy updates.
POLICY_UPDATE_ATTEMPTS = 5


def pieces(bundle: NamespaceBundle, points: Sequence[int]) -> list[NamespaceBundle]:
    """The bundles that cutting bundle at points (sorted, inside its range) gives."""
    edges = [bundle.lower, *points, bundle.upper]
    if not points or any(a >= b for a, b in itertools.pairwise(edges)):
        raise errors.PreconditionFailedError(
            f"split points {[f'0x{p:08x}' for p in points]} do not divide {bundle}")
    last = len(edges) - 2
    return [NamespaceBundle(bundle.namespace, edges[i], edges[i + 1], bundle.closed and i == last)
            for i in range(len(edges) - 1)]


async def split(namespaces: NamespaceService, bundle: NamespaceBundle,
                points: Sequence[int]) -> list[NamespaceBundle]:
    """Split bundle (owned here) at points; returns the pieces, all owned here."""
    if not namespaces.ownership.owns(bundle):
        raise errors.PreconditionFailedError(f"bundle {bundle} is not owned by this broker")
    children = pieces(bundle, points)
    taken: list[NamespaceBundle] = []
    for child in children:
        if await namespaces.ownership.try_acquire(child) != namespaces.me:
            for done in taken:
                await namespaces.ownership.release(done)
            raise errors.ConflictError(f"another broker owns part of {bundle}")
        taken.append(child)
    try:
        await _add_boundaries(namespaces, bundle, points)
    except BaseException:
        for done in taken:
            await namespaces.ownership.release(done)
        raise
    await namespaces.ownership.release(bundle)
    log.info("split bundle %s into %s", bundle, ", ".join(c.range for c in children))
    return children


async def _add_boundaries(namespaces: NamespaceService, bundle: NamespaceBundle,
                          points: Sequence[int]) -> None:
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
        boundaries = sorted([*current, *points])
        policies["bundles"] = {"boundaries": [f"0x{b:08x}" for b in boundaries],
                               "numBundles": len(boundaries) - 1}
        try:
            await namespaces.store.put(path, json.dumps(policies, sort_keys=True).encode(),
                                       found.stat.version)
            return
        except md_errors.BadVersionError:
            continue
    raise errors.ConflictError(f"policies of {bundle.namespace} kept changing; split abandoned")
