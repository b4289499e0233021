"""Tenant/PulsarNamespace sync and cleanup over HTTP, against a recording admin server.

The server is a real aiohttp server speaking the admin v2 paths (see
conftest.RecordingAdminServer); it stands in for the broker's admin API
until `pulsar standalone` can be started by these tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from pulsar_operator import admin, errors, kube, services
from pulsar_operator.plan import AdminCall

Example = Callable[[str], dict[str, Any]]
NO_KUBE = cast(kube.KubeClient, None)  # clusterRef.webServiceURL needs no Kubernetes lookup


def pointed_at(body: dict[str, Any], url: str) -> dict[str, Any]:
    body["spec"]["clusterRef"] = {"webServiceURL": url}
    return body


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


async def test_a_tenant_is_created_then_left_alone_then_corrected(example: Example, admin_server: Any) -> None:
    body = pointed_at(example("tenant.yaml"), admin_server.url)
    status = await services.sync_tenant(body, NO_KUBE, admin.AdminClient)
    assert condition(status, "Ready")["status"] == "True" and status["tenant"] == "acme"
    assert admin_server.tenants["acme"] == {"adminRoles": ["acme-admin"], "allowedClusters": ["pulsar-mini"]}
    assert [(m, p) for m, p, _ in admin_server.requests] == [("GET", "/admin/v2/tenants/acme"),
                                                             ("PUT", "/admin/v2/tenants/acme")]
    admin_server.requests.clear()
    await services.sync_tenant(body, NO_KUBE, admin.AdminClient)
    assert admin_server.calls("PUT") == [] and admin_server.calls("POST") == []
    admin_server.tenants["acme"]["adminRoles"] = ["intruder"]
    status = await services.sync_tenant(body, NO_KUBE, admin.AdminClient)
    assert admin_server.tenants["acme"]["adminRoles"] == ["acme-admin"]
    assert condition(status, "Ready")["message"] == "drift corrected"


async def test_a_namespace_gets_its_policies_and_drift_is_reverted(example: Example, admin_server: Any) -> None:
    await services.sync_tenant(pointed_at(example("tenant.yaml"), admin_server.url), NO_KUBE, admin.AdminClient)
    body = pointed_at(example("namespace.yaml"), admin_server.url)
    status = await services.sync_namespace(body, NO_KUBE, admin.AdminClient)
    assert condition(status, "Ready")["status"] == "True" and status["namespace"] == "acme/orders"
    policies = admin_server.namespaces["acme/orders"]
    assert policies["bundles"] == {"numBundles": 4}
    assert policies["message_ttl_in_seconds"] == 86400 and policies["deduplicationEnabled"] is True
    admin_server.requests.clear()
    assert condition(await services.sync_namespace(body, NO_KUBE, admin.AdminClient), "Ready")["message"] == "in line"
    assert admin_server.calls("POST") == []
    policies["message_ttl_in_seconds"] = 1
    await services.sync_namespace(body, NO_KUBE, admin.AdminClient)
    assert [p for _, p, _ in admin_server.calls("POST")] == ["/admin/v2/namespaces/acme/orders/messageTTL"]
    assert policies["message_ttl_in_seconds"] == 86400


async def test_a_namespace_of_a_missing_tenant_reports_the_error(example: Example, admin_server: Any) -> None:
    status = await services.sync_namespace(pointed_at(example("namespace.yaml"), admin_server.url), NO_KUBE,
                                           admin.AdminClient)
    degraded = condition(status, "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "AdminApi"
    assert "PUT /admin/v2/namespaces/acme/orders: HTTP 404" in degraded["message"]


@pytest.mark.parametrize(("policy", "left"), [("CleanUpAfterDeletion", False), ("KeepAfterDeletion", True)])
async def test_deletion_cleans_up_only_with_clean_up_after_deletion(example: Example, admin_server: Any,
                                                                    policy: str, left: bool) -> None:
    body = pointed_at(example("tenant.yaml"), admin_server.url)
    body["spec"]["lifecyclePolicy"] = policy
    await services.sync_tenant(body, NO_KUBE, admin.AdminClient)
    message = await services.delete_in_pulsar(body, NO_KUBE, admin.AdminClient)
    assert ("acme" in admin_server.tenants) is left
    assert message == ("tenant acme kept in Pulsar (KeepAfterDeletion)" if left else "tenant acme deleted in Pulsar")
    if not left:
        # Deleting again (a retried finalizer) finds it gone: 404 counts as done.
        await services.delete_in_pulsar(body, NO_KUBE, admin.AdminClient)


@pytest.mark.parametrize(("status", "retriable"), [(500, True), (503, True), (409, True), (403, False), (400, False)])
async def test_error_statuses_become_admin_errors_with_a_retriable_flag(admin_server: Any, status: int,
                                                                        retriable: bool) -> None:
    admin_server.fail_with = status
    async with admin.AdminClient(admin_server.url) as api:
        with pytest.raises(errors.AdminApiError) as caught:
            await api.call(AdminCall("POST", "/admin/v2/tenants/x", {"adminRoles": []}))
    assert caught.value.status == status and caught.value.retriable is retriable


async def test_listed_ok_statuses_count_as_success(admin_server: Any) -> None:
    admin_server.tenants["x"] = {}
    async with admin.AdminClient(admin_server.url) as api:
        await api.call(AdminCall("PUT", "/admin/v2/tenants/x", {}, ok_statuses=(409,)))
        assert await api.get("/admin/v2/tenants/missing") is None


async def test_an_unreachable_cluster_is_a_retriable_error() -> None:
    from pulsar_common.testing import free_port

    async with admin.AdminClient(f"http://127.0.0.1:{free_port()}") as api:
        with pytest.raises(errors.AdminApiError) as caught:
            await api.get("/admin/v2/tenants/x")
    assert caught.value.status is None and caught.value.retriable


async def test_cluster_metadata_calls_reach_the_admin_api(example: Example, admin_server: Any) -> None:
    from pulsar_operator import cluster_reconcile, naming

    body = example("pulsar-cluster.yaml")
    observed = {naming.BROKER: cluster_reconcile.ObservedSet(2, 2, 1)}
    plan = cluster_reconcile.reconcile(body, observed, "2026-01-01T00:00:00Z")
    async with admin.AdminClient(admin_server.url) as api:
        await api.run(plan.admin_calls)
    assert [(m, p) for m, p, _ in admin_server.requests] == [
        ("PUT", "/admin/v2/clusters/pulsar-mini"), ("PUT", "/admin/v2/tenants/public"),
        ("PUT", "/admin/v2/namespaces/public/default")]
