"""How an input partition reads its segment: read sizes follow entry sizes, one read ahead."""

from __future__ import annotations

import concurrent.futures

from pulsar_spark import catalog, entries, planning, segment_reads


class StoredLedger:
    """An EntrySource over entries kept in memory; records each read call."""

    def __init__(self, sizes: list[int]) -> None:
        self.data = [bytes([i % 251]) * size for i, size in enumerate(sizes)]
        self.calls: list[tuple[int, int]] = []

    def read(self, ledger: entries.LedgerLocation, first: int, last: int) -> list[bytes]:
        return self.submit(ledger, first, last).result()

    def submit(self, ledger: entries.LedgerLocation, first: int, last: int) \
            -> concurrent.futures.Future[list[bytes]]:
        self.calls.append((first, last))
        future: concurrent.futures.Future[list[bytes]] = concurrent.futures.Future()
        future.set_result(self.data[first : last + 1])
        return future

    def close(self) -> None:
        pass


def _planned(first: int, last: int) -> catalog.PlannedRead:
    segment = planning.Segment(planning.TopicPartition("persistent://t/n/x", -1), 7, first, last)
    return catalog.PlannedRead(segment, entries.LedgerLocation(7, b"{}", last))


def test_large_entries_are_read_a_few_at_a_time_and_in_order() -> None:
    ledger = StoredLedger([100_000] * 40)
    got = list(segment_reads._chunks(ledger, _planned(3, 39)))
    assert [(lid, eid) for lid, eid, _ in got] == [(7, e) for e in range(3, 40)]
    assert [d for _, _, d in got] == ledger.data[3:40]
    sizes = [last - first + 1 for first, last in ledger.calls]
    assert sizes[0] == segment_reads.ENTRIES_PER_READ_FIRST
    assert max(sizes[1:]) == segment_reads.READ_BYTES_TARGET // 100_000
    assert ledger.calls[-1][1] == 39


def test_small_entries_are_read_many_at_a_time() -> None:
    ledger = StoredLedger([100] * 1000)
    assert len(list(segment_reads._chunks(ledger, _planned(0, 999)))) == 1000
    assert max(last - first + 1 for first, last in ledger.calls) == segment_reads.ENTRIES_PER_READ_MAX


def test_the_read_ahead_is_one_call_and_is_cancelled_when_the_reader_stops() -> None:
    ledger = StoredLedger([200_000] * 10)
    reads = segment_reads._chunks(ledger, _planned(0, 9))
    next(reads)
    assert len(ledger.calls) == 2  # the first call and the one decoded next
    reads.close()
    assert len(ledger.calls) == 2


def test_an_empty_segment_reads_nothing() -> None:
    ledger = StoredLedger([10] * 3)
    assert list(segment_reads._chunks(ledger, _planned(2, 1))) == []
    assert ledger.calls == []
