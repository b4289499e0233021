"""Autorecovery decisions, pure: which bookies are lost, which ledgers to mark, what to copy where.

The auditor and the replication worker are thin adapters around these
functions; time comes in as `now_ms` and randomness as a `random.Random`, so
the tests drive them with tables and hypothesis.

Invariant the worker keeps with them: a fragment's ensemble only ever changes
from a bookie to one that already holds every entry of the fragment that the
striping puts on that ensemble position, and never for the last fragment of a
ledger that is still open (its writer owns it).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence

from pulsar_bookie import types
from pulsar_bookie.client import api
from pulsar_bookie.client.replicated import placement, schedule


@dataclasses.dataclass(frozen=True)
class FragmentRange:
    """Fragment `index` of a ledger: entries first..last (last is None while still written)."""

    index: int
    first: types.EntryId
    last: types.EntryId | None
    ensemble: tuple[types.BookieId, ...]

    @property
    def closed(self) -> bool:
        return self.last is not None


def fragment_ranges(metadata: api.LedgerMetadata) -> list[FragmentRange]:
    """Every fragment with its entry range; the last one of an unclosed ledger is open."""
    fragments = metadata.ensembles
    ranges = []
    for index, fragment in enumerate(fragments):
        last: types.EntryId | None
        if index + 1 < len(fragments):
            last = types.EntryId(fragments[index + 1].first_entry_id - 1)
        elif metadata.is_closed:
            last = metadata.last_entry_id
        else:
            last = None
        ranges.append(FragmentRange(index, fragment.first_entry_id, last, fragment.ensemble))
    return ranges


def bookies_of(metadata: api.LedgerMetadata) -> frozenset[types.BookieId]:
    return frozenset(b for fragment in metadata.ensembles for b in fragment.ensemble)


# ----- the auditor -----


@dataclasses.dataclass(frozen=True)
class Audit:
    """What one audit decided."""

    #: ledger id -> the bookies of it to replace.
    marks: Mapping[types.LedgerId, frozenset[types.BookieId]]
    #: bookie -> when the auditor first saw it missing (carried to the next audit).
    missing_since_ms: Mapping[types.BookieId, int]
    #: When a bookie seen missing becomes due, if one is still waiting (for a timer).
    next_due_ms: int | None


def audit(
    ledgers: Iterable[api.LedgerMetadata],
    registered: Collection[types.BookieId],
    decommissioning: Collection[types.BookieId],
    missing_since_ms: Mapping[types.BookieId, int],
    now_ms: int,
    delay_ms: int,
    *,
    force: bool = False,
) -> Audit:
    """Mark every ledger with a fragment on a bookie that is gone for delay_ms (at once when
    force), or that is being decommissioned (at once, registered or not)."""
    ledgers = list(ledgers)
    referenced = frozenset().union(*(bookies_of(m) for m in ledgers)) if ledgers else frozenset()
    missing = {b for b in referenced if b not in registered}
    since = {b: missing_since_ms.get(b, now_ms) for b in missing}
    due = {b for b, t in since.items() if force or now_ms - t >= delay_ms}
    due |= set(decommissioning) & referenced
    waiting = [t + delay_ms for b, t in since.items() if b not in due]
    marks = {}
    for metadata in ledgers:
        bad = bookies_of(metadata) & due
        if bad:
            marks[metadata.ledger_id] = frozenset(bad)
    return Audit(marks, since, min(waiting) if waiting else None)


# ----- the replication worker -----


@dataclasses.dataclass(frozen=True)
class Repair:
    """Copy the entries of a closed fragment held by `bad` at ensemble position `position`."""

    fragment: FragmentRange
    bad: types.BookieId
    position: int


@dataclasses.dataclass(frozen=True)
class RepairPlan:
    repairs: tuple[Repair, ...]
    #: The open last fragment holds a bad bookie: left to the writer (or to fencing).
    open_fragment_affected: bool


def repairs_for(metadata: api.LedgerMetadata, bad: Collection[types.BookieId]) -> RepairPlan:
    repairs = []
    open_affected = False
    for fragment in fragment_ranges(metadata):
        for position, bookie in enumerate(fragment.ensemble):
            if bookie not in bad:
                continue
            if fragment.closed:
                repairs.append(Repair(fragment, bookie, position))
            else:
                open_affected = True
    return RepairPlan(tuple(repairs), open_affected)


def entries_at(position: int, fragment: FragmentRange, ensemble_size: int,
               write_quorum: int) -> Iterator[types.EntryId]:
    """Entries of a closed fragment that the striping stores on ensemble position."""
    assert fragment.last is not None
    for entry_id in range(fragment.first, fragment.last + 1):
        if position in schedule.write_set(entry_id, ensemble_size, write_quorum):
            yield types.EntryId(entry_id)


def sources_for(entry_id: int, fragment: FragmentRange, ensemble_size: int, write_quorum: int,
                bad: Collection[types.BookieId]) -> list[types.BookieId]:
    """The other bookies of the entry's write set to read it from (healthy ones only)."""
    members = [fragment.ensemble[i]
               for i in schedule.write_set(entry_id, ensemble_size, write_quorum)]
    return [b for b in members if b not in bad]


def placement_repairs(metadata: api.LedgerMetadata, racks: Mapping[types.BookieId, str],
                      racks_available: int) -> list[Repair]:
    """Closed fragments whose bookies share a rack while writable bookies exist in racks the
    fragment does not use: one repair per bookie to move (a rack's second and later members,
    as many as racks are missing). Bookies without a rack all count as one rack."""
    repairs = []
    for fragment in fragment_ranges(metadata):
        if not fragment.closed:
            continue
        wanted = min(len(fragment.ensemble), racks_available)
        first_of_rack: set[str] = set()
        surplus = []
        for position, bookie in enumerate(fragment.ensemble):
            rack = racks.get(bookie, "")
            if rack in first_of_rack:
                surplus.append(Repair(fragment, bookie, position))
            first_of_rack.add(rack)
        repairs.extend(surplus[:max(0, wanted - len(first_of_rack))])
    return repairs


def replacement_for(
    candidates: Sequence[placement.BookieInfo],
    ensemble: Sequence[types.BookieId],
    bad: types.BookieId,
    avoid: Collection[types.BookieId],
    rng: random.Random,
) -> types.BookieId:
    """A writable bookie outside the ensemble and outside avoid (lost or draining bookies),
    by the rack-aware placement policy. NotEnoughBookiesError when there is none."""
    return placement.replace_bookie(candidates, ensemble, bad, rng, exclude=avoid)


def swapped(metadata: api.LedgerMetadata, repair: Repair,
            new: types.BookieId) -> api.LedgerMetadata | None:
    """metadata with new in place of repair.bad in the repaired fragment; None when the
    fragment changed since the plan (another worker fixed it, or it was deleted)."""
    fragments = list(metadata.ensembles)
    index = repair.fragment.index
    if index >= len(fragments):
        return None
    fragment = fragments[index]
    if (fragment.first_entry_id != repair.fragment.first
            or fragment.ensemble[repair.position] != repair.bad):
        return None
    ranges = fragment_ranges(metadata)
    if ranges[index].last != repair.fragment.last:
        return None
    ensemble = list(fragment.ensemble)
    ensemble[repair.position] = new
    fragments[index] = api.Fragment(fragment.first_entry_id, tuple(ensemble))
    return dataclasses.replace(metadata, ensembles=tuple(fragments))
