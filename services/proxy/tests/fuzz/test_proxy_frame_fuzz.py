"""Hypothesis-driven hostile frames at the session's proxy, both on connections the proxy
answers itself (lookups, partitioned metadata) and on connections it relays to the broker
(CONNECT with proxy_to_broker_url). After each example an official client's message still
goes round through the proxy, and that client keeps its first connection."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pulsar_broker import testing as broker_testing

from tools.fuzz import driver, frames

EXAMPLES = 200


@pytest.fixture(scope="module")
def witness(proxy: broker_testing.ProxyProcess,
            standalone: broker_testing.StandaloneProcess) -> Iterator[driver.Witness]:
    watching = driver.Witness(proxy.service_url, standalone.web_url)
    yield watching
    assert watching.connection_kept(), "the witness client's connection was closed"
    watching.close()


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_frames_to_the_proxy_itself_harm_no_other_connection(
        proxy: broker_testing.ProxyProcess, witness: driver.Witness, rng: random.Random) -> None:
    asyncio.run(driver.deliver("127.0.0.1", proxy.broker_port, frames.attack(rng)))
    witness.round_trip()


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_frames_relayed_to_the_broker_harm_no_other_connection(
        proxy: broker_testing.ProxyProcess, standalone: broker_testing.StandaloneProcess,
        witness: driver.Witness, rng: random.Random) -> None:
    target = standalone.service_url.removeprefix("pulsar://")
    asyncio.run(driver.deliver("127.0.0.1", proxy.broker_port, frames.attack(rng),
                               proxy_to_broker_url=target))
    witness.round_trip()


def test_the_witness_kept_its_connection_through_the_fuzz(witness: driver.Witness) -> None:
    witness.round_trip()
    assert witness.connection_kept()
