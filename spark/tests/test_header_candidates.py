"""The scan's header search over 16-bit words finds exactly the byte positions a plain search does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_spark import unpack

TAG = 3 << 3  # payload_size's tag, the byte after a header's size


def _plain(data: np.ndarray) -> list[int]:
    return [p for p in range(len(data) - 4)
            if not data[p] and not data[p + 1] and not data[p + 2] and data[p + 3]
            and data[p + 4] == TAG]


# Bytes drawn mostly from zeros and the tag, so header lookalikes and long zero runs are common.
header_like = st.lists(st.sampled_from([0, 0, 0, 1, TAG, 0x80]), max_size=64)


@settings(max_examples=500, deadline=None)
@given(header_like, st.integers(0, 3))
def test_header_candidates_match_a_plain_search(values: list[int], offset: int) -> None:
    # An offset into a larger buffer: word pairs are counted from the array's start.
    data = np.frombuffer(bytes(offset) + bytes(values), np.uint8)[offset:]
    assert unpack._header_candidates(data).tolist() == _plain(data)
