"""The periodic replica check finds bookies that lack entries the striping puts on them."""

from __future__ import annotations

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import checker
from pulsar_bookie.client import api
from pulsar_bookie.storage import api as storage_api

from .test_plan import ledger


class FakeBookie:
    """Answers reads from a set of entries it holds; no network."""

    def __init__(self, bookie_id: str, held: set[int], reachable: bool = True) -> None:
        self._id = types.BookieId(bookie_id)
        self.held = held
        self.reachable = reachable

    @property
    def bookie_id(self) -> types.BookieId:
        return self._id

    async def read_entry(self, ledger_id: types.LedgerId, entry_id: types.EntryId, *,
                         fence: bool = False, master_key: bytes = b"") -> storage_api.StoredEntry:
        if not self.reachable:
            raise errors.BookieUnavailableError(f"{self._id} is down")
        if entry_id not in self.held:
            raise errors.NoSuchEntryError(f"{self._id} has no entry {entry_id}")
        return storage_api.StoredEntry(ledger_id, entry_id, types.EntryId(entry_id - 1), b"x")


class FakePool:
    def __init__(self, *bookies: FakeBookie) -> None:
        self._bookies = {b.bookie_id: b for b in bookies}

    def get(self, bookie_id: types.BookieId) -> FakeBookie:
        return self._bookies[bookie_id]


def striped(metadata: api.LedgerMetadata, position: int, end: int = 20) -> set[int]:
    return {e for e in range(end + 1)
            if (position - e) % metadata.ensemble_size < metadata.write_quorum_size}


async def test_bookies_holding_their_entries_pass_and_one_that_lost_them_is_named() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c"))], last=20)
    a, b, c = (FakeBookie(n, striped(metadata, i)) for i, n in enumerate("abc"))
    pool = FakePool(a, b, c)
    assert await checker.bookies_missing_entries(pool, metadata, 5) == frozenset()  # type: ignore[arg-type]
    b.held = striped(metadata, 1) - {max(striped(metadata, 1))}
    assert await checker.bookies_missing_entries(pool, metadata, 5) == {"b"}  # type: ignore[arg-type]


async def test_unreachable_bookies_and_the_open_fragment_are_left_to_other_checks() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c")), (10, ("a", "b", "d"))], last=None)
    a, b, c = (FakeBookie(n, striped(metadata, i, end=9))
               for i, n in enumerate("abc"))
    d = FakeBookie("d", set())
    c.reachable = False
    pool = FakePool(a, b, c, d)
    assert await checker.bookies_missing_entries(pool, metadata, 5) == frozenset()  # type: ignore[arg-type]
