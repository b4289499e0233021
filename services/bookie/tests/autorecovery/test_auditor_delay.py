"""How the auditor reacts to writes of lostBookieRecoveryDelay (BookKeeper's rules)."""

from __future__ import annotations

import pytest
from pulsar_bookie import types
from pulsar_bookie.autorecovery import auditor

MISSING = {types.BookieId("b1"): 1000}


@pytest.mark.parametrize(("seen", "fresh", "audit_now", "clocks"), [
    pytest.param((60, 3), (60, 3), False, MISSING, id="notification-without-a-write"),
    pytest.param((60, 3), (60, 4), True, MISSING, id="same-value-rewritten-is-trigger-audit"),
    pytest.param((60, 3), (0, 4), True, MISSING, id="zero-audits-now"),
    pytest.param((60, 3), (1800, 4), False, {"b1": 5000}, id="new-value-counts-from-now"),
    pytest.param((0, -1), (0, 0), True, MISSING, id="first-write-of-zero"),
])
def test_delay_writes(seen: tuple[int, int], fresh: tuple[int, int], audit_now: bool,
                      clocks: dict[str, int]) -> None:
    assert auditor._on_delay_change(seen, fresh, dict(MISSING), 5000) == (audit_now, clocks)
