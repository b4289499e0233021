"""Namespace isolation policies: validation and placement, table-driven."""

from __future__ import annotations

from typing import Any

import pytest
from pulsar_broker.namespace import isolation


def policy(namespaces: list[str], primary: list[str], secondary: list[str] | None = None,
           min_limit: int = 1) -> dict[str, Any]:
    return isolation.validate({
        "namespaces": namespaces, "primary": primary, "secondary": secondary or [],
        "auto_failover_policy": {"policy_type": "min_available",
                                 "parameters": {"min_limit": min_limit, "usage_threshold": 80}}})


BROKERS = ["a1:8080", "a2:8080", "b1:8080", "c1:8080"]
POLICIES = {
    "gold": policy(["public/gold.*"], ["a.*"], ["b.*"], min_limit=2),
    "silver": policy(["public/silver"], ["b1:8080"]),
}


@pytest.mark.parametrize(("namespace", "live", "expected"), [
    # Enough primaries: only they.
    ("public/gold-1", BROKERS, ["a1:8080", "a2:8080"]),
    # Fewer primaries than min_limit: the secondaries join.
    ("public/gold-1", ["a1:8080", "b1:8080", "c1:8080"], ["a1:8080", "b1:8080"]),
    ("public/silver", BROKERS, ["b1:8080"]),
    # Named by no policy: the brokers no policy names.
    ("public/default", BROKERS, ["c1:8080"]),
    # A rule that leaves nobody: every live broker, never an unassignable namespace.
    ("public/silver", ["a1:8080", "c1:8080"], ["a1:8080", "c1:8080"]),
    ("public/default", ["a1:8080", "b1:8080"], ["a1:8080", "b1:8080"]),
])
def test_candidates(namespace: str, live: list[str], expected: list[str]) -> None:
    assert isolation.candidates(POLICIES, namespace, live) == expected


def test_without_policies_every_broker_is_a_candidate() -> None:
    assert isolation.candidates({}, "public/default", BROKERS) == BROKERS


def test_broker_data_names_the_policy_and_whether_the_broker_is_primary() -> None:
    assert isolation.broker_data(POLICIES, "b1:8080") == {
        "brokerName": "b1:8080", "policyName": "silver", "primary": True,
        "namespaceRegex": ["public/gold.*", "public/silver"]}
    assert isolation.broker_data(POLICIES, "c1:8080") == {
        "brokerName": "c1:8080", "policyName": None, "primary": False, "namespaceRegex": []}


@pytest.mark.parametrize("body", [
    None, [], {"namespaces": [], "primary": ["a"],
               "auto_failover_policy": {"policy_type": "min_available",
                                        "parameters": {"min_limit": "1", "usage_threshold": "80"}}},
    {"namespaces": ["x"], "primary": ["("],
     "auto_failover_policy": {"policy_type": "min_available",
                              "parameters": {"min_limit": "1", "usage_threshold": "80"}}},
    {"namespaces": ["x"], "primary": ["a"]},
    {"namespaces": ["x"], "primary": ["a"],
     "auto_failover_policy": {"policy_type": "other", "parameters": {}}},
    {"namespaces": ["x"], "primary": ["a"],
     "auto_failover_policy": {"policy_type": "min_available", "parameters": {"min_limit": "1"}}},
])
def test_invalid_policy_data_is_refused(body: Any) -> None:
    with pytest.raises(isolation.InvalidIsolationDataError):
        isolation.validate(body)


def test_a_valid_policy_is_stored_with_string_parameters() -> None:
    assert policy(["public/x"], ["a.*"])["auto_failover_policy"] == {
        "policy_type": "min_available", "parameters": {"min_limit": "1", "usage_threshold": "80"}}
