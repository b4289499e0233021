"""e2e: Tenant and PulsarNamespace through the operator against a real `pulsar standalone`.

The operator process runs against kmock's emulator (as in test_e2e_emulator)
and talks to the admin REST API of a real `pulsar standalone` child process:
what the custom resources ask for must show up in Pulsar, drift must be
reverted, and deletion with CleanUpAfterDeletion must remove it from Pulsar.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from pulsar_common.testing import free_port
from pulsar_operator import emulation
from pulsar_operator import tenant_namespace as tn

from .conftest import EXAMPLES

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(emulation.KUBECTL), reason="kubectl is not installed"),
]
WAIT_S = 60.0
GROUP_PATH = "/apis/pulsar.pulsar-py.dev/v1alpha1/namespaces/default"


class Env:
    def __init__(self, url: str, kubeconfig: Any, pulsar_url: str, operator: emulation.OperatorProcess) -> None:
        self.url = url
        self.kubeconfig = kubeconfig
        self.pulsar_url = pulsar_url
        self.operator = operator

    async def request(self, method: str, base: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session, session.request(method, base + path, json=body) as resp:
            text = await resp.text()
            return resp.status, (yaml.safe_load(text) if text else None)

    async def pulsar(self, path: str) -> Any:
        status, body = await self.request("GET", self.pulsar_url, path)
        return body if status == 200 else None

    async def apply(self, doc: dict[str, Any]) -> None:
        await emulation.kubectl(self.kubeconfig, "apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(doc))

    async def until(self, check: Any, what: str) -> None:
        await emulation.wait_for(check, WAIT_S, what)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    from pulsar_broker.testing import StandaloneProcess

    tmp = tmp_path_factory.mktemp("standalone-e2e")
    standalone = StandaloneProcess(tmp / "data")
    await asyncio.to_thread(standalone.start)
    try:
        async with emulation.running_emulator() as (_, url):
            kubeconfig = emulation.write_kubeconfig(tmp / "kubeconfig", url)
            await emulation.kubectl(kubeconfig, "apply", "--validate=false", "-f", str(emulation.CRD_DIR))
            operator = emulation.OperatorProcess(kubeconfig, free_port(), "--no-leader-election", "--namespace",
                                                 "default", "--resync-interval", "1", log=tmp / "operator.log")
            await operator.start()
            try:
                await emulation.wait_for(operator.healthy, WAIT_S, "operator /healthz")
                yield Env(url, kubeconfig, standalone.web_url, operator)
            finally:
                await operator.stop()
    finally:
        await asyncio.to_thread(standalone.stop)


def pointed_at(name: str, url: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    doc["spec"]["clusterRef"] = {"webServiceURL": url}
    if doc["kind"] == "Tenant":
        doc["spec"]["allowedClusters"] = ["standalone"]
    return doc


async def test_tenant_and_namespace_appear_in_pulsar_with_their_policies(env: Env) -> None:
    await env.apply(pointed_at("tenant.yaml", env.pulsar_url))
    await env.apply(pointed_at("namespace.yaml", env.pulsar_url))

    async def namespace_ready() -> bool:
        policies = await env.pulsar("/admin/v2/namespaces/acme/orders")
        return bool(policies and policies.get("message_ttl_in_seconds") == 86400
                    and policies.get("persistence"))

    await env.until(namespace_ready, "acme/orders with its policies in Pulsar")
    tenant = await env.pulsar("/admin/v2/tenants/acme")
    assert tenant["adminRoles"] == ["acme-admin"] and tenant["allowedClusters"] == ["standalone"]
    policies = await env.pulsar("/admin/v2/namespaces/acme/orders")
    assert policies["bundles"]["numBundles"] == 4
    assert policies["retention_policies"] == {"retentionTimeInMinutes": 1440, "retentionSizeInMB": 1024}
    assert policies["deduplicationEnabled"] is True
    assert policies["persistence"]["bookkeeperEnsemble"] == 2
    assert policies["backlog_quota_map"]["destination_storage"]["limitSize"] == 1073741824
    # What the broker reports reads as "in line": the resync timer will not write again.
    assert tn.plan_namespace(tn.parse_namespace(pointed_at("namespace.yaml", env.pulsar_url)), policies) == []
    assert tn.plan_tenant(tn.parse_tenant(pointed_at("tenant.yaml", env.pulsar_url)), tenant) == []

    async def status_ready() -> bool:
        _, body = await env.request("GET", env.url, f"{GROUP_PATH}/pulsarnamespaces/acme-orders")
        conditions = (body.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    await env.until(status_ready, "PulsarNamespace Ready")


async def test_a_policy_changed_in_pulsar_is_put_back(env: Env) -> None:
    status, _ = await env.request("POST", env.pulsar_url, "/admin/v2/namespaces/acme/orders/messageTTL", 5)
    assert status in (200, 204)

    async def reverted() -> bool:
        policies = await env.pulsar("/admin/v2/namespaces/acme/orders")
        return bool(policies and policies.get("message_ttl_in_seconds") == 86400)

    await env.until(reverted, "messageTTL put back to 86400")


async def test_deleting_the_resources_deletes_namespace_and_tenant_in_pulsar(env: Env) -> None:
    await emulation.kubectl(env.kubeconfig, "delete", "pulsarnamespace", "acme-orders", "--wait=false")

    async def namespace_gone() -> bool:
        return await env.pulsar("/admin/v2/namespaces/acme/orders") is None

    await env.until(namespace_gone, "acme/orders deleted in Pulsar")
    await emulation.kubectl(env.kubeconfig, "delete", "tenant", "acme", "--wait=false")

    async def tenant_gone() -> bool:
        return await env.pulsar("/admin/v2/tenants/acme") is None

    await env.until(tenant_gone, "tenant acme deleted in Pulsar")

    async def released() -> bool:
        status, body = await env.request("GET", env.url, f"{GROUP_PATH}/tenants")
        return status == 200 and not body.get("items")

    await env.until(released, "Tenant gone from Kubernetes")


async def test_cluster_metadata_initialisation_is_accepted_and_repeatable(env: Env) -> None:
    from pulsar_operator import admin, cluster_reconcile, cluster_spec

    body = yaml.safe_load((EXAMPLES / "pulsar-cluster.yaml").read_text())
    body["metadata"]["namespace"] = "default"
    calls = cluster_reconcile.metadata_calls(cluster_spec.parse(body))
    async with admin.AdminClient(env.pulsar_url) as api:
        await api.run(calls)
        await api.run(calls)  # already there: 409s count as done
    cluster = await env.pulsar("/admin/v2/clusters/pulsar-mini")
    assert cluster is not None and cluster["serviceUrl"] == "http://pulsar-mini-broker.default.svc:8080"
    assert await env.pulsar("/admin/v2/tenants/public") is not None
    assert await env.pulsar("/admin/v2/namespaces/public/default") is not None
