"""Which bookies hold an entry, and when enough of them have answered. Pure functions.

Entries are striped round-robin: entry e of an ensemble of E bookies goes to
the WQ bookies at indices e, e+1, ..., e+WQ-1 (mod E). An add is acknowledged
once AQ of them have it. Any set of bookies that misses at most AQ-1 members
of every write set therefore intersects every ack quorum: that is what fencing
and "this entry was never acknowledged" need to know.
"""

from __future__ import annotations

from collections.abc import Collection


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    """Indices into the ensemble of the bookies that store entry_id."""
    return [(entry_id + i) % ensemble_size for i in range(write_quorum)]


def all_write_sets(ensemble_size: int, write_quorum: int) -> list[list[int]]:
    return [write_set(start, ensemble_size, write_quorum) for start in range(ensemble_size)]


def covers_every_ack_quorum(
    responded: Collection[int], ensemble_size: int, write_quorum: int, ack_quorum: int
) -> bool:
    """True when every write set has at least WQ-AQ+1 members in responded, so that no
    ack quorum can be formed without one of them (fencing is then effective). With
    E == WQ this is the familiar (E - AQ) + 1 responses."""
    needed = write_quorum - ack_quorum + 1
    return all(
        sum(1 for index in members if index in responded) >= needed
        for members in all_write_sets(ensemble_size, write_quorum)
    )


def entry_absent(no_such_entry: Collection[object], write_quorum: int, ack_quorum: int) -> bool:
    """An entry is known never to have been acknowledged once WQ-AQ+1 bookies of its write
    set say they do not have it: any ack quorum would have included one of them."""
    return len(no_such_entry) >= write_quorum - ack_quorum + 1
