"""The entry cache against a deliberately simple model: a list of entries, oldest first.

The cache indexes its entries by managed ledger and ledger id so that dropping
a ledger costs what it drops; whatever mix of inserts, reads, evictions and
drops, it must hold the same entries, sizes and counters as the list, and
evict in the same (insertion) order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_broker.managed_ledger import api, cache

LIMIT_BYTES = 100
NAMES = ("a", "b", "c")


@dataclass
class ListCache:
    """The reference: every entry in a list, oldest first, dropped by filtering."""

    entries: list[tuple[str, int, int, int]] = field(default_factory=list)
    evictions: int = 0
    evicted_entries: int = 0
    inserted_entries: int = 0

    @property
    def size_bytes(self) -> int:
        return sum(size for *_, size in self.entries)

    def insert(self, name: str, ledger_id: int, entry_id: int, size: int) -> None:
        if size > LIMIT_BYTES or any(e[:3] == (name, ledger_id, entry_id) for e in self.entries):
            return
        if self.size_bytes + size > LIMIT_BYTES:
            self.evictions += 1
            while self.size_bytes + size > LIMIT_BYTES:
                self.entries.pop(0)
                self.evicted_entries += 1
        self.entries.append((name, ledger_id, entry_id, size))
        self.inserted_entries += 1


operations = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(NAMES), st.integers(1, 3),
              st.integers(0, 6), st.integers(0, 40)),
    st.tuples(st.just("ledger"), st.sampled_from(NAMES), st.integers(1, 3)),
    st.tuples(st.just("all"), st.sampled_from(NAMES)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(operations)
def test_the_cache_holds_and_evicts_what_a_plain_list_would(steps: list[tuple]) -> None:
    entries = cache.EntryCache(limit_bytes=LIMIT_BYTES)
    model = ListCache()
    for step in steps:
        if step[0] == "insert":
            _, name, ledger_id, entry_id, size = step
            entries.insert(name, api.Entry(api.Position(ledger_id, entry_id), b"x" * size))
            model.insert(name, ledger_id, entry_id, size)
        elif step[0] == "ledger":
            _, name, ledger_id = step
            entries.invalidate_ledger(name, ledger_id)
            model.entries = [e for e in model.entries if e[:2] != (name, ledger_id)]
        else:
            entries.invalidate_all(step[1])
            model.entries = [e for e in model.entries if e[0] != step[1]]
        assert len(entries) == len(model.entries)
        assert entries.size_bytes == model.size_bytes
        for name, ledger_id, entry_id, _ in model.entries:
            assert entries.contains(name, api.Position(ledger_id, entry_id))
    counts = entries.counts()
    assert (counts.evictions, counts.evicted_entries, counts.inserted_entries) == (
        model.evictions, model.evicted_entries, model.inserted_entries)
    assert counts.used_bytes == model.size_bytes and counts.entries == len(model.entries)


def test_dropping_a_ledger_leaves_the_others_in_eviction_order() -> None:
    entries = cache.EntryCache(limit_bytes=40)
    for ledger_id, name in ((1, "a"), (2, "a"), (1, "b"), (3, "a")):
        entries.insert(name, api.Entry(api.Position(ledger_id, 0), b"x" * 10))
    entries.invalidate_ledger("a", 2)
    entries.invalidate_ledger("a", 9)
    entries.invalidate_all("z")
    # Room for 20 more bytes means the two oldest left: a:1 first, then b:1.
    entries.insert("c", api.Entry(api.Position(1, 0), b"x" * 30))
    assert not entries.contains("a", api.Position(1, 0))
    assert not entries.contains("b", api.Position(1, 0))
    assert entries.contains("a", api.Position(3, 0))
    assert entries.size_bytes == 40 and entries.evicted_entries == 2
    # A dropped ledger's entries can be cached again.
    entries.invalidate_all("a")
    entries.insert("a", api.Entry(api.Position(2, 0), b"x" * 10))
    assert entries.contains("a", api.Position(2, 0)) and len(entries) == 2
