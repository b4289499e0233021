"""Resource quotas (stored only) and namespace isolation policies over REST, with Apache's
paths, JSON and statuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Http

QUOTAS = "/admin/v2/resource-quotas"
ISOLATION = "/admin/v2/clusters/standalone/namespaceIsolationPolicies"
INITIAL = {"msgRateIn": 40.0, "msgRateOut": 120.0, "bandwidthIn": 100000.0,
           "bandwidthOut": 300000.0, "memory": 80.0, "dynamic": True}
QUOTA = {"msgRateIn": 10.0, "msgRateOut": 20.0, "bandwidthIn": 1000.0, "bandwidthOut": 2000.0,
         "memory": 50.0, "dynamic": False}


@pytest.fixture
def namespace(http: Http, unique: str) -> str:
    ns = f"public/quota-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}", {"bundles": {"numBundles": 2}}).status == 204
    return ns


@pytest.fixture
def default_quota_restored(http: Http) -> Iterator[Http]:
    yield http
    http.post(QUOTAS, INITIAL)


def test_a_bundle_quota_falls_back_to_the_default(default_quota_restored: Http,
                                                  namespace: str) -> None:
    http = default_quota_restored
    bundle = f"{QUOTAS}/{namespace}/0x00000000_0x80000000"
    assert http.get(QUOTAS).json() == INITIAL
    assert http.get(bundle).json() == INITIAL
    assert http.post(bundle, QUOTA).status == 204
    assert http.get(bundle).json() == QUOTA
    assert http.get(f"{QUOTAS}/{namespace}/0x80000000_0xffffffff").json() == INITIAL
    assert http.post(QUOTAS, {"msgRateIn": 5}).status == 204
    assert http.get(QUOTAS).json() == {**INITIAL, "msgRateIn": 5.0, "msgRateOut": 0.0,
                                       "bandwidthIn": 0.0, "bandwidthOut": 0.0, "memory": 0.0}
    assert http.delete(bundle).status == 204
    assert http.get(bundle).json()["msgRateIn"] == 5.0


def test_bad_quotas_and_unknown_bundles_are_refused(http: Http, namespace: str) -> None:
    assert http.post(QUOTAS, {"msgRateIn": "fast"}).status == 400
    assert http.post(QUOTAS, {"cpu": 1}).status == 400
    assert http.get(f"{QUOTAS}/{namespace}/0x00000000_0x40000000").status == 404
    assert http.get(f"{QUOTAS}/{namespace}/not-a-range").status == 400
    assert http.get(f"{QUOTAS}/public/no-such-ns/0x00000000_0xffffffff").status == 404


def _policy(namespaces: list[str], primary: list[str]) -> dict[str, object]:
    return {"namespaces": namespaces, "primary": primary, "secondary": [],
            "auto_failover_policy": {"policy_type": "min_available",
                                     "parameters": {"min_limit": "1", "usage_threshold": "80"}}}


def test_isolation_policies_are_stored_listed_and_deleted(http: Http, unique: str) -> None:
    name = f"policy-{unique}"
    policy = _policy([f"public/iso-{unique}.*"], ["127\\.0\\.0\\.1:.*"])
    assert http.post(f"{ISOLATION}/{name}", policy).status == 204
    assert http.get(f"{ISOLATION}/{name}").json() == policy
    assert http.get(ISOLATION).json()[name] == policy
    brokers = http.get(f"{ISOLATION}/brokers").json()
    assert len(brokers) == 1 and brokers[0]["policyName"] is not None
    assert brokers[0]["primary"] is True and policy["namespaces"][0] in brokers[0]["namespaceRegex"]
    one = http.get(f"{ISOLATION}/brokers/{brokers[0]['brokerName']}").json()
    assert one == brokers[0]
    assert http.delete(f"{ISOLATION}/{name}").status == 204
    reply = http.get(f"{ISOLATION}/{name}")
    assert (reply.status, reply.reason) == (
        404, f"Cannot find NamespaceIsolationPolicy {name} for cluster standalone")
    assert name not in http.get(ISOLATION).json()


def test_invalid_isolation_data_and_unknown_clusters(http: Http, unique: str) -> None:
    reply = http.post(f"{ISOLATION}/bad-{unique}", {"namespaces": [], "primary": []})
    assert reply.status == 400
    assert reply.reason.startswith(f"Invalid format of input policy data. policy: bad-{unique}")
    other = "/admin/v2/clusters/no-such-cluster/namespaceIsolationPolicies"
    assert http.get(other).status == 404
    assert http.get(f"{other}/p").status == 412
    assert http.post(f"{other}/p", _policy(["a/b"], ["x"])).status == 412
    assert http.delete(f"{other}/p").status == 412


def test_a_cluster_with_isolation_policies_is_not_deleted(http: Http, unique: str) -> None:
    cluster = f"iso-cluster-{unique}"
    assert http.put(f"/admin/v2/clusters/{cluster}", {"serviceUrl": "http://x:8080"}).status == 204
    policies = f"/admin/v2/clusters/{cluster}/namespaceIsolationPolicies"
    assert http.post(f"{policies}/p", _policy(["a/b"], ["x"])).status == 204
    reply = http.delete(f"/admin/v2/clusters/{cluster}")
    assert (reply.status, reply.reason) == (412, "Cluster not empty")
    assert http.delete(f"{policies}/p").status == 204
    assert http.delete(f"/admin/v2/clusters/{cluster}").status == 204
    assert http.get(f"/admin/v2/clusters/{cluster}").status == 404
    assert http.get(policies).status == 404
