"""Namespace isolation policies: which brokers may own the bundles of which namespaces.

A cluster's policies (Apache's NamespaceIsolationData, stored by name in one
record per cluster) each name namespaces by regular expression, primary and
secondary brokers by regular expression over "host:port", and an
auto-failover policy. Placement follows Apache's rule: a namespace a policy
names goes to its live primary brokers, or to primary and secondary ones
when fewer than `min_limit` primaries are live; a namespace no policy names
goes to the brokers no policy names (the shared ones). The
`usage_threshold` parameter is kept but not applied (brokers report no
usage percentage here). When a rule leaves no live broker, every live broker
is a candidate, so a namespace never becomes unassignable.

Pure: values in, decisions out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: Apache's AutoFailoverPolicyType values.
POLICY_TYPES = ("min_available",)
#: Which namespaces setting a policy unloads (Apache's NamespaceIsolationPolicyUnloadScope);
#: "changed" unloads every named namespace here, like "all_matching".
UNLOAD_SCOPES = ("all_matching", "none", "changed")
#: Parameters min_available needs (Apache's MinAvailablePolicy).
MIN_AVAILABLE_PARAMETERS = ("min_limit", "usage_threshold")


class InvalidIsolationDataError(ValueError):
    """Policy data Apache refuses (IllegalArgumentException there: 400)."""


def validate(body: Any) -> dict[str, Any]:
    """The policy as stored and served, or InvalidIsolationDataError."""
    if not isinstance(body, dict):
        raise InvalidIsolationDataError("policy data must be a JSON object")
    namespaces = _regex_list(body.get("namespaces"), "namespaces", required=True)
    primary = _regex_list(body.get("primary"), "primary", required=True)
    secondary = _regex_list(body.get("secondary", []), "secondary", required=False)
    failover = body.get("auto_failover_policy")
    if not isinstance(failover, dict) or failover.get("policy_type") not in POLICY_TYPES:
        raise InvalidIsolationDataError(
            f"auto_failover_policy.policy_type must be one of {', '.join(POLICY_TYPES)}")
    parameters = failover.get("parameters")
    if not isinstance(parameters, dict):
        raise InvalidIsolationDataError("auto_failover_policy.parameters must be an object")
    for name in MIN_AVAILABLE_PARAMETERS:
        try:
            int(str(parameters.get(name)))
        except ValueError as exc:
            raise InvalidIsolationDataError(f"parameter {name} must be an integer") from exc
    policy: dict[str, Any] = {
        "namespaces": namespaces, "primary": primary, "secondary": secondary,
        "auto_failover_policy": {"policy_type": failover["policy_type"],
                                 "parameters": {str(k): str(v) for k, v in parameters.items()}}}
    if body.get("unload_scope") is not None:
        if body["unload_scope"] not in UNLOAD_SCOPES:
            raise InvalidIsolationDataError(
                f"unload_scope must be one of {', '.join(UNLOAD_SCOPES)}")
        policy["unload_scope"] = body["unload_scope"]
    return policy


def _regex_list(value: Any, what: str, *, required: bool) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidIsolationDataError(f"{what} must be a list of regular expressions")
    if required and not value:
        raise InvalidIsolationDataError(f"{what} must not be empty")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InvalidIsolationDataError(f"invalid policy regex {pattern}") from exc
    return list(value)


def _matches(patterns: Sequence[str], text: str) -> bool:
    return any(re.fullmatch(p, text) for p in patterns if p.strip())


def is_primary(policy: Mapping[str, Any], broker: str) -> bool:
    return _matches(policy.get("primary", []), broker)


def is_secondary(policy: Mapping[str, Any], broker: str) -> bool:
    return _matches(policy.get("secondary", []), broker)


def policy_for(policies: Mapping[str, Mapping[str, Any]],
               namespace: str) -> Mapping[str, Any] | None:
    """The first policy (by name) whose namespaces name this one ("tenant/ns")."""
    for name in sorted(policies):
        if _matches(policies[name].get("namespaces", []), namespace):
            return policies[name]
    return None


def candidates(policies: Mapping[str, Mapping[str, Any]], namespace: str,
               brokers: Sequence[str]) -> list[str]:
    """The live brokers (ids "host:port") that may own a bundle of namespace."""
    policy = policy_for(policies, namespace)
    if policy is None:
        named = {b for b in brokers for p in policies.values()
                 if is_primary(p, b) or is_secondary(p, b)}
        chosen = [b for b in brokers if b not in named]
    else:
        primary = [b for b in brokers if is_primary(policy, b)]
        min_limit = int(policy["auto_failover_policy"]["parameters"].get("min_limit", 1))
        if len(primary) >= max(min_limit, 1):
            chosen = primary
        else:
            chosen = primary + [b for b in brokers if is_secondary(policy, b) and b not in primary]
    return chosen or list(brokers)


def broker_data(policies: Mapping[str, Mapping[str, Any]], broker: str) -> dict[str, Any]:
    """Apache's BrokerNamespaceIsolationData of one broker."""
    data: dict[str, Any] = {"brokerName": broker, "policyName": None, "primary": False,
                            "namespaceRegex": []}
    for name in sorted(policies):
        policy = policies[name]
        if is_primary(policy, broker) or is_secondary(policy, broker):
            data["namespaceRegex"].extend(policy.get("namespaces", []))
            data["primary"] = is_primary(policy, broker)
            data["policyName"] = name
    return data


def record_path(cluster: str) -> str:
    """Where a cluster's policies are stored (Apache's path): one JSON map, name -> policy."""
    return f"/admin/clusters/{cluster}/namespaceIsolationPolicies"
