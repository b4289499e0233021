"""Tenant and PulsarNamespace -> admin REST calls (pure plans, table-driven)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pulsar_operator import tenant_namespace as tn
from pulsar_operator.plan import AdminCall

Example = Callable[[str], dict[str, Any]]


def test_a_missing_tenant_is_created_with_roles_and_clusters(example: Example) -> None:
    spec = tn.parse_tenant(example("tenant.yaml"))
    assert tn.plan_tenant(spec, None) == [AdminCall(
        "PUT", "/admin/v2/tenants/acme", {"adminRoles": ["acme-admin"], "allowedClusters": ["pulsar-mini"]},
        ok_statuses=(409,))]


@pytest.mark.parametrize(("observed", "expected_method"), [
    ({"adminRoles": ["acme-admin"], "allowedClusters": ["pulsar-mini"]}, None),
    ({"adminRoles": ["acme-admin"], "allowedClusters": ["pulsar-mini"], "extra": 1}, None),
    ({"adminRoles": [], "allowedClusters": ["pulsar-mini"]}, "POST"),
    ({"adminRoles": ["acme-admin"], "allowedClusters": ["other"]}, "POST"),
])
def test_tenant_drift_is_corrected_by_an_update(example: Example, observed: dict[str, Any],
                                                expected_method: str | None) -> None:
    calls = tn.plan_tenant(tn.parse_tenant(example("tenant.yaml")), observed)
    assert [c.method for c in calls] == ([expected_method] if expected_method else [])


def test_allowed_clusters_default_to_the_referenced_cluster(example: Example) -> None:
    body = example("tenant.yaml")
    del body["spec"]["allowedClusters"]
    assert tn.parse_tenant(body, "pulsar-mini").allowed_clusters == ("pulsar-mini",)
    assert tn.parse_tenant(body).tenant == "acme"


@pytest.mark.parametrize(("policy", "calls"), [
    ("CleanUpAfterDeletion", [AdminCall("DELETE", "/admin/v2/tenants/acme", ok_statuses=(404,))]),
    ("KeepAfterDeletion", []),
])
def test_tenant_deletion_honours_the_lifecycle_policy(example: Example, policy: str, calls: list[AdminCall]) -> None:
    body = example("tenant.yaml")
    body["spec"]["lifecyclePolicy"] = policy
    assert tn.delete_tenant(tn.parse_tenant(body)) == calls


def test_a_missing_namespace_is_created_with_its_bundles_then_its_policies(example: Example) -> None:
    spec = tn.parse_namespace(example("namespace.yaml"))
    calls = tn.plan_namespace(spec, None)
    base = "/admin/v2/namespaces/acme/orders"
    assert calls == [
        AdminCall("PUT", base, {"bundles": {"numBundles": 4}}, ok_statuses=(409,)),
        AdminCall("POST", f"{base}/retention", {"retentionTimeInMinutes": 1440, "retentionSizeInMB": 1024}),
        AdminCall("POST", f"{base}/messageTTL", 86400),
        AdminCall("POST", f"{base}/backlogQuota",
                  {"limitSize": 1073741824, "limitTime": -1, "policy": "producer_request_hold"},
                  params=(("backlogQuotaType", "destination_storage"),)),
        AdminCall("POST", f"{base}/deduplication", True),
        AdminCall("POST", f"{base}/persistence", {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2,
                                                  "bookkeeperAckQuorum": 2, "managedLedgerMaxMarkDeleteRate": 0.0}),
    ]


IN_LINE = {
    "bundles": {"numBundles": 8, "boundaries": []},
    "retention_policies": {"retentionTimeInMinutes": 1440, "retentionSizeInMB": 1024},
    "message_ttl_in_seconds": 86400,
    "backlog_quota_map": {"destination_storage": {"limitSize": 1073741824, "limitTime": -1,
                                                  "policy": "producer_request_hold"}},
    "deduplicationEnabled": True,
    "persistence": {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2,
                    "managedLedgerMaxMarkDeleteRate": 0.0},
}


@pytest.mark.parametrize(("drift", "paths"), [
    ({}, []),
    ({"message_ttl_in_seconds": 60}, ["/messageTTL"]),
    ({"retention_policies": {"retentionTimeInMinutes": 1, "retentionSizeInMB": 1024}}, ["/retention"]),
    ({"deduplicationEnabled": False}, ["/deduplication"]),
    ({"backlog_quota_map": {}}, ["/backlogQuota"]),
    ({"persistence": None}, ["/persistence"]),
    ({"bundles": {"numBundles": 16}}, []),  # bundles split on their own after creation
], ids=["in-line", "ttl", "retention", "dedup", "quota", "persistence", "bundles-split"])
def test_namespace_drift_re_applies_only_the_drifted_policy(example: Example, drift: dict[str, Any],
                                                             paths: list[str]) -> None:
    observed = {**IN_LINE, **drift}
    calls = tn.plan_namespace(tn.parse_namespace(example("namespace.yaml")), observed)
    assert [c.path.removeprefix("/admin/v2/namespaces/acme/orders") for c in calls] == paths
    assert all(c.method == "POST" for c in calls)


def test_policies_left_out_of_the_spec_are_not_managed(example: Example) -> None:
    body = example("namespace.yaml")
    body["spec"] = {"tenant": "acme", "clusterRef": {"name": "pulsar-mini"}}
    spec = tn.parse_namespace(body)
    assert spec.namespace == "acme-orders"
    assert tn.plan_namespace(spec, None) == [AdminCall("PUT", "/admin/v2/namespaces/acme/acme-orders", None,
                                                       ok_statuses=(409,))]
    assert tn.plan_namespace(spec, {"message_ttl_in_seconds": 5}) == []


def test_a_time_based_backlog_quota_uses_the_message_age_type(example: Example) -> None:
    body = example("namespace.yaml")
    body["spec"]["backlogQuota"] = {"limitTimeSeconds": 3600, "policy": "consumer_backlog_eviction"}
    calls = [c for c in tn.plan_namespace(tn.parse_namespace(body), None) if c.path.endswith("/backlogQuota")]
    assert calls == [AdminCall("POST", "/admin/v2/namespaces/acme/orders/backlogQuota",
                               {"limitSize": -1, "limitTime": 3600, "policy": "consumer_backlog_eviction"},
                               params=(("backlogQuotaType", "message_age"),))]


@pytest.mark.parametrize(("policy", "methods"), [("CleanUpAfterDeletion", ["DELETE"]), ("KeepAfterDeletion", [])])
def test_namespace_deletion_honours_the_lifecycle_policy(example: Example, policy: str, methods: list[str]) -> None:
    body = example("namespace.yaml")
    body["spec"]["lifecyclePolicy"] = policy
    assert [c.method for c in tn.delete_namespace(tn.parse_namespace(body))] == methods


@pytest.mark.parametrize(("kind", "change", "message"), [
    ("namespace.yaml", {"persistence": {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 3, "bookkeeperAckQuorum": 2}},
     "bookkeeperWriteQuorum (3) <= bookkeeperEnsemble (2)"),
    ("namespace.yaml", {"persistence": {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 3}},
     "bookkeeperAckQuorum (3) <= bookkeeperWriteQuorum (2)"),
    ("namespace.yaml", {"tenant": "bad/name"}, "spec.tenant 'bad/name' is not a valid Pulsar name"),
    ("namespace.yaml", {"bundles": 0}, "spec.bundles must be between 1 and 65536"),
    ("namespace.yaml", {"clusterRef": {}}, "spec.clusterRef needs name or webServiceURL"),
    ("tenant.yaml", {"lifecyclePolicy": "Sometimes"}, "spec.lifecyclePolicy must be"),
    ("tenant.yaml", {"name": "a b"}, "tenant name 'a b' is not a valid Pulsar name"),
])
def test_invalid_tenants_and_namespaces_are_reported(example: Example, kind: str, change: dict[str, Any],
                                                     message: str) -> None:
    body = example(kind)
    body["spec"].update(change)
    problems = tn.validate_namespace(body) if kind == "namespace.yaml" else tn.validate_tenant(body)
    assert any(message in p for p in problems), problems


def test_the_samples_are_valid(example: Example) -> None:
    assert tn.validate_tenant(example("tenant.yaml")) == []
    assert tn.validate_namespace(example("namespace.yaml")) == []
