"""Message-id strings built by one gather, checked against plain Python formatting."""

from __future__ import annotations

import numpy as np
import pytest
from pulsar_spark import columns, unpack


def _chunk(ledger_id: int, entry_id: int, count: int, *, batched: bool) -> columns.Chunk:
    positions = np.arange(count, dtype=np.int64)
    layout = unpack.Layout(starts=positions, ends=positions, sequence_ids=positions,
                           event_times=positions)
    return columns.Chunk(ledger_id=ledger_id, entry_id=entry_id, publish_time=0,
                         producer_name="p", batched=batched, layout=layout)


def _expected(chunks: list[columns.Chunk], partition: int) -> list[str]:
    return [f"{c.ledger_id}:{c.entry_id}:{partition}:{i if c.batched else -1}"
            for c in chunks for i in range(len(c))]


CHUNKS = [_chunk(12, 0, 1, batched=False), _chunk(12, 1, 1, batched=True),
          _chunk(9_000_000_000, 123_456, 1234, batched=True), _chunk(3, 4, 1, batched=False),
          _chunk(3, 5, 11, batched=True)]


def test_ids_of_batched_and_single_entries():
    ids = columns.message_ids(CHUNKS, 17)
    assert ids.type == "string"
    assert ids.to_pylist() == _expected(CHUNKS, 17)


@pytest.mark.parametrize("limit", [1, 10, 11, 1234])
def test_batches_past_the_ready_digits_take_the_slow_path(monkeypatch, limit):
    monkeypatch.setattr(columns, "BATCH_INDEX_STRINGS_MAX", limit)
    assert columns.message_ids(CHUNKS, 0).to_pylist() == _expected(CHUNKS, 0)
    assert columns.message_ids(CHUNKS[:2], 0).to_pylist() == _expected(CHUNKS[:2], 0)
