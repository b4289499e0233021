"""Choosing bookies for an ensemble, spread over racks (zones) when bookies carry one. Pure."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from pulsar_bookie import errors, types


@dataclass(frozen=True)
class BookieInfo:
    bookie_id: types.BookieId
    rack: str = ""
    writable: bool = True


class BookieSource(Protocol):
    """Where the client learns which bookies exist (registrations in the metadata store)."""

    async def bookies(self) -> list[BookieInfo]: ...


#: Fewer writable bookies than the ensemble needs (the errors module's, named here too).
NotEnoughBookiesError = errors.NotEnoughBookiesError


def choose_ensemble(
    candidates: Sequence[BookieInfo],
    size: int,
    rng: random.Random,
    exclude: Iterable[types.BookieId] = (),
    keep: Sequence[types.BookieId] = (),
) -> list[types.BookieId]:
    """size bookies: those in keep first, then writable candidates not excluded, taking one
    per rack in turn (fewest used racks first) so that losing a rack loses fewest copies."""
    excluded = set(exclude) | set(keep)
    pool = [c for c in candidates if c.writable and c.bookie_id not in excluded]
    chosen = list(keep)
    if len(chosen) + len(pool) < size:
        raise NotEnoughBookiesError(
            f"need {size} bookies, {len(chosen) + len(pool)} writable available")
    by_rack: dict[str, list[BookieInfo]] = {}
    for candidate in sorted(pool, key=lambda c: c.bookie_id):
        by_rack.setdefault(candidate.rack, []).append(candidate)
    for members in by_rack.values():
        rng.shuffle(members)
    rack_use = {rack: 0 for rack in by_rack}
    for bookie in keep:
        for info in candidates:
            if info.bookie_id == bookie and info.rack in rack_use:
                rack_use[info.rack] += 1
    while len(chosen) < size:
        racks = [r for r, members in by_rack.items() if members]
        least = min(rack_use[r] for r in racks)
        rack = rng.choice(sorted(r for r in racks if rack_use[r] == least))
        chosen.append(by_rack[rack].pop().bookie_id)
        rack_use[rack] += 1
    return chosen


def replace_bookie(
    candidates: Sequence[BookieInfo],
    ensemble: Sequence[types.BookieId],
    failed: types.BookieId,
    rng: random.Random,
    exclude: Iterable[types.BookieId] = (),
) -> types.BookieId:
    """A writable bookie outside the ensemble to take failed's place, preferring its rack's
    least represented neighbours."""
    keep = [b for b in ensemble if b != failed]
    chosen = choose_ensemble(candidates, len(keep) + 1, rng, exclude={failed, *exclude},
                             keep=keep)
    return chosen[-1]
