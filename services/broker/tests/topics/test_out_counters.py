"""Dispatch totals that never go backwards while consumers come and go (the counters behind
msgRateOut in the load report, the REST stats and /metrics)."""

from __future__ import annotations

import types

from pulsar_broker.topics import out_counters


def consumer(msg_out: int, bytes_out: int) -> types.SimpleNamespace:
    return types.SimpleNamespace(msg_out=msg_out, bytes_out=bytes_out)


def test_the_same_consumers_give_their_current_counts() -> None:
    counters = out_counters.OutCounters()
    a, b = consumer(1, 10), consumer(2, 20)
    assert counters.totals("t", [a, b]) == (3, 30)
    counters.end_pass()
    a.msg_out, a.bytes_out = 5, 50
    assert counters.totals("t", [a, b]) == (7, 70)


def test_a_departed_consumer_keeps_its_final_counts_in_the_total() -> None:
    counters = out_counters.OutCounters()
    gone, staying = consumer(1, 10), consumer(2, 20)
    counters.totals("t", [gone, staying])
    counters.end_pass()
    gone.msg_out, gone.bytes_out = 4, 40  # dispatched to before it left
    assert counters.totals("t", [staying, consumer(0, 0)]) == (6, 60)
    counters.end_pass()
    assert counters.totals("t", [staying]) == (6, 60)


def test_a_key_not_observed_in_a_pass_is_forgotten() -> None:
    counters = out_counters.OutCounters()
    counters.totals("unloaded", [consumer(1, 10)])
    counters.totals("kept", [consumer(2, 20)])
    counters.end_pass()
    counters.totals("kept", [])
    counters.end_pass()
    assert counters.totals("unloaded", []) == (0, 0)  # nothing retired under it any more
    assert counters.totals("kept", []) == (2, 20)
