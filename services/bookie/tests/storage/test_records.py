"""Journal and entry log record layouts: round trips and torn-tail detection."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from pulsar_bookie.storage import records


@given(
    st.integers(0, 2**62), st.integers(0, 2**62), st.integers(-1, 2**62), st.binary(max_size=300)
)
def test_add_entry_record_round_trips(ledger: int, entry: int, lac: int, payload: bytes) -> None:
    data = records.add_entry_record(ledger, entry, lac, payload)
    body = records.check_record(data)
    assert body is not None
    decoded = records.decode_journal_body(body)
    assert (decoded.type, decoded.ledger_id, decoded.entry_id) == (
        records.RecordType.ADD_ENTRY,
        ledger,
        entry,
    )
    assert (decoded.last_add_confirmed, decoded.payload) == (lac, payload)


def test_fence_master_key_and_delete_records_round_trip() -> None:
    for data, kind in (
        (records.fence_record(7), records.RecordType.FENCE),
        (records.delete_ledger_record(7), records.RecordType.DELETE_LEDGER),
    ):
        body = records.check_record(data)
        assert body is not None
        assert records.decode_journal_body(body) == records.JournalRecord(kind, 7)
    body = records.check_record(records.master_key_record(7, b"secret"))
    assert body is not None
    assert records.decode_journal_body(body).master_key == b"secret"


@given(st.integers(1, 60))
def test_scan_stops_at_a_record_cut_short(cut: int) -> None:
    good = records.add_entry_record(1, 0, -1, b"a" * 50)
    torn = records.add_entry_record(1, 1, 0, b"b" * 50)
    data = good + torn[:cut]
    result = records.ScanResult()
    assert [offset for offset, _ in records.scan(data, 0, result)] == [0]
    assert result.torn and result.valid_end == len(good)


def test_scan_stops_at_a_checksum_mismatch() -> None:
    good = records.add_entry_record(1, 0, -1, b"a" * 50)
    bad = bytearray(records.add_entry_record(1, 1, 0, b"b" * 50))
    bad[-1] ^= 0xFF
    result = records.ScanResult()
    assert len(list(records.scan(good + bytes(bad) + good, 0, result))) == 1
    assert result.torn and result.valid_end == len(good)
