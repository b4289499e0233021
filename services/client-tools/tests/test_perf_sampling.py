"""How many messages `pulsar-perf produce` times: all without batching, fewer with it, never a
number that would let untimed messages hold every in-flight permit."""

from __future__ import annotations

import argparse

import pytest
from pulsar_client_tools.perf import produce


def _args(sample_every: int, batching: bool) -> argparse.Namespace:
    return argparse.Namespace(latency_sample_every=sample_every, disable_batching=not batching)


@pytest.mark.parametrize(
    ("asked", "batching", "producers", "outstanding", "expected"),
    [
        (0, False, 1, 1000, 1),
        (0, True, 1, 1000, produce.BATCHED_SAMPLE_EVERY),
        (7, True, 1, 1000, 7),
        (0, True, 2, 50, 25),
        (100, False, 4, 10, 2),
        (0, True, 20, 10, 1),
    ],
)
def test_sampling_interval_fits_within_the_in_flight_limit(
    asked, batching, producers, outstanding, expected
):
    assert produce.sample_every(_args(asked, batching), producers, outstanding) == expected
