"""Hypothesis-driven hostile frames at the session's standalone broker: truncated frames,
lying sizes, random protobuf, every client command with hostile values, broken SEND
payloads and interleavings. After each example an official client's message still goes
round, and at the end that client is still on its first connection: a bad frame closes
only the connection it came on."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulsar_broker import testing as broker_testing

from tools.fuzz import driver, frames

EXAMPLES = 400


@pytest.fixture(scope="module")
def witness(standalone: broker_testing.StandaloneProcess) -> Iterator[driver.Witness]:
    watching = driver.Witness(standalone.service_url, standalone.web_url)
    yield watching
    assert watching.connection_kept(), "the witness client's connection was closed"
    watching.close()


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_frames_harm_no_other_connection(
        standalone: broker_testing.StandaloneProcess, witness: driver.Witness,
        rng: random.Random) -> None:
    attack = frames.attack(rng)
    asyncio.run(driver.deliver("127.0.0.1", standalone.broker_port, attack))
    witness.round_trip()


def test_the_witness_kept_its_connection_through_the_fuzz(witness: driver.Witness) -> None:
    witness.round_trip()
    assert witness.connection_kept()
