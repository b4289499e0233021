"""Time as the managed ledger sees it: re-exports pulsar_common.clock (the one implementation)."""

from __future__ import annotations

from pulsar_common.clock import ManualClock, NowMs, wall_clock_ms

__all__ = ["ManualClock", "NowMs", "wall_clock_ms"]
