"""The broker's connection bookkeeping over all its listeners: brokerMaxConnections and
brokerMaxConnectionsPerIp, and the counts /metrics exports."""

from __future__ import annotations

import pytest
from pulsar_broker.service.connections import BrokerConnections


def test_connections_are_counted_from_admission_to_close() -> None:
    connections = BrokerConnections(0)
    assert connections.admit("10.0.0.1") is None
    assert connections.admit("10.0.0.2") is None
    connections.connected()
    connections.connect_refused()  # the second one's CONNECT failed authentication
    connections.release("10.0.0.2")
    assert (connections.created, connections.closed, connections.active) == (2, 1, 1)
    assert (connections.create_succeeded, connections.create_failed) == (1, 1)


def test_the_limits_hold_for_the_broker_and_each_address_and_refusals_count_as_failures() -> None:
    connections = BrokerConnections(max_connections=3, max_connections_per_ip=2)
    assert connections.admit("a") is None
    assert connections.admit("a") is None
    assert connections.admit("a") is not None  # per address
    assert connections.admit("b") is None
    assert connections.admit("c") is not None  # in all
    assert (connections.created, connections.create_failed, connections.active) == (3, 2, 3)
    connections.release("a")
    assert connections.admit("c") is None  # a place is free again
    assert connections.admit("a") is not None
    assert (connections.active, connections.closed, connections.create_failed) == (3, 1, 3)


def test_negative_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        BrokerConnections(-1)
