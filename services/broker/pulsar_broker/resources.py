"""Cluster, tenant, namespace and partitioned-topic records in the metadata store.

Paths and JSON shapes follow Apache Pulsar's so that a reader of the store
finds what they expect: /admin/clusters/<c>, /admin/policies/<tenant>,
/admin/policies/<tenant>/<ns>, /admin/partitioned-topics/<t>/<ns>/<domain>/<topic>,
and the managed ledgers under /managed-ledgers/<t>/<ns>/<domain>/<topic>.
"""

from __future__ import annotations

import json
from typing import Any

from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors

CLUSTERS = "/admin/clusters"
POLICIES = "/admin/policies"
PARTITIONED = "/admin/partitioned-topics"
MANAGED_LEDGERS = "/managed-ledgers"
#: Topic-level policies (Apache keeps them in a system topic; here one record per topic).
TOPIC_POLICIES = "/admin/topic-policies"

DEFAULT_BUNDLES = 4
FULL_RANGE = 0x100000000


def bundle_boundaries(count: int) -> list[str]:
    """Evenly split hash space boundaries, as Apache renders them ("0x00000000", ...)."""
    step = FULL_RANGE // count
    points = [i * step for i in range(count)] + [FULL_RANGE - 1]
    return [f"0x{p:08x}" for p in points]


def default_policies(num_bundles: int = DEFAULT_BUNDLES) -> dict[str, Any]:
    return {
        "bundles": {"boundaries": bundle_boundaries(num_bundles), "numBundles": num_bundles},
        "replication_clusters": [],
        "retention_policies": None,
        "message_ttl_in_seconds": None,
        "backlog_quota_map": {},
        "deduplicationEnabled": None,
        "schema_compatibility_strategy": "UNDEFINED",
        "autoTopicCreationOverride": None,
        "persistence": None,
        "deleted": False,
    }


def _dump(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True).encode()


class PulsarResources:
    """Typed access to the admin records; every write is a compare-and-set."""

    def __init__(self, store: md.MetadataStore) -> None:
        self.store = store

    async def _get_json(self, path: str) -> tuple[Any, int] | None:
        result = await self.store.get(path)
        if result is None:
            return None
        return json.loads(result.value), result.stat.version

    async def _create(self, path: str, value: Any, what: str) -> None:
        try:
            await self.store.put(path, _dump(value), md.VERSION_ABSENT)
        except md_errors.AlreadyExistsError as exc:
            raise errors.ConflictError(f"{what} already exists") from exc

    async def _update(self, path: str, value: Any, what: str) -> None:
        current = await self._get_json(path)
        if current is None:
            raise errors.NotFoundError(f"{what} does not exist")
        try:
            await self.store.put(path, _dump(value), current[1])
        except md_errors.BadVersionError as exc:
            raise errors.ConflictError(f"{what} was modified concurrently") from exc

    # Clusters

    async def list_clusters(self) -> list[str]:
        return await self.store.get_children(CLUSTERS)

    async def get_cluster(self, name: str) -> dict[str, Any]:
        found = await self._get_json(f"{CLUSTERS}/{name}")
        if found is None:
            raise errors.NotFoundError("Cluster does not exist")
        value: dict[str, Any] = found[0]
        return value

    async def create_cluster(self, name: str, data: dict[str, Any]) -> None:
        await self._create(f"{CLUSTERS}/{name}", data, "Cluster")

    async def update_cluster(self, name: str, data: dict[str, Any]) -> None:
        await self._update(f"{CLUSTERS}/{name}", data, "Cluster")

    async def delete_cluster(self, name: str) -> None:
        try:
            await self.store.delete(f"{CLUSTERS}/{name}")
        except md_errors.NotFoundError as exc:
            raise errors.NotFoundError("Cluster does not exist") from exc

    # Failure domains of a cluster (Apache: /admin/clusters/<cluster>/failureDomain/<name>)

    async def list_failure_domains(self, cluster: str) -> dict[str, dict[str, Any]]:
        await self.get_cluster(cluster)
        domains = {}
        for name in await self.store.get_children(f"{CLUSTERS}/{cluster}/failureDomain"):
            found = await self._get_json(f"{CLUSTERS}/{cluster}/failureDomain/{name}")
            if found is not None:
                domains[name] = found[0]
        return domains

    async def get_failure_domain(self, cluster: str, name: str) -> dict[str, Any]:
        await self.get_cluster(cluster)
        found = await self._get_json(f"{CLUSTERS}/{cluster}/failureDomain/{name}")
        if found is None:
            raise errors.NotFoundError("Domain does not exist")
        value: dict[str, Any] = found[0]
        return value

    async def set_failure_domain(self, cluster: str, name: str, domain: dict[str, Any]) -> None:
        """Create or replace a domain (Apache's POST does both)."""
        await self.get_cluster(cluster)
        path = f"{CLUSTERS}/{cluster}/failureDomain/{name}"
        current = await self._get_json(path)
        if current is None:
            await self._create(path, domain, "Domain")
        else:
            await self._update(path, domain, "Domain")

    async def delete_failure_domain(self, cluster: str, name: str) -> None:
        await self.get_cluster(cluster)
        try:
            await self.store.delete(f"{CLUSTERS}/{cluster}/failureDomain/{name}")
        except md_errors.NotFoundError as exc:
            raise errors.NotFoundError("Domain does not exist") from exc

    # Topic-level policies (Apache's TopicPolicies fields: retentionPolicies, messageTTLInSeconds,
    # maxProducerPerTopic, ...); a topic without any has no record.

    async def get_topic_policies(self, topic: naming.TopicName) -> dict[str, Any]:
        found = await self._get_json(f"{TOPIC_POLICIES}/{topic.persistence_name}")
        return {} if found is None else dict(found[0])

    async def set_topic_policies(self, topic: naming.TopicName, value: dict[str, Any]) -> None:
        """Replace the topic's record; an empty one is deleted."""
        path = f"{TOPIC_POLICIES}/{topic.persistence_name}"
        current = await self._get_json(path)
        if not value:
            if current is not None:
                try:
                    await self.store.delete(path, current[1])
                except md_errors.BadVersionError as exc:
                    raise errors.ConflictError("Topic policies were modified concurrently") from exc
                except md_errors.NotFoundError:
                    pass
            return
        if current is None:
            await self._create(path, value, "Topic policies")
        else:
            try:
                await self.store.put(path, _dump(value), current[1])
            except md_errors.BadVersionError as exc:
                raise errors.ConflictError("Topic policies were modified concurrently") from exc

    # Tenants

    async def list_tenants(self) -> list[str]:
        return await self.store.get_children(POLICIES)

    async def get_tenant(self, tenant: str) -> dict[str, Any]:
        found = await self._get_json(f"{POLICIES}/{tenant}")
        if found is None:
            raise errors.NotFoundError("Tenant does not exist")
        value: dict[str, Any] = found[0]
        return value

    async def tenant_exists(self, tenant: str) -> bool:
        return await self.store.exists(f"{POLICIES}/{tenant}")

    async def create_tenant(self, tenant: str, info: dict[str, Any]) -> None:
        await self._create(f"{POLICIES}/{tenant}", info, "Tenant")

    async def update_tenant(self, tenant: str, info: dict[str, Any]) -> None:
        await self._update(f"{POLICIES}/{tenant}", info, "Tenant")

    async def delete_tenant(self, tenant: str) -> None:
        if not await self.tenant_exists(tenant):
            raise errors.NotFoundError("Tenant does not exist")
        if await self.list_namespaces(tenant):
            raise errors.PreconditionFailedError("The tenant still has active namespaces")
        await self.store.delete(f"{POLICIES}/{tenant}")

    # Namespaces

    async def list_namespaces(self, tenant: str) -> list[str]:
        return [f"{tenant}/{ns}" for ns in await self.store.get_children(f"{POLICIES}/{tenant}")]

    async def namespace_exists(self, ns: naming.NamespaceName) -> bool:
        return await self.store.exists(f"{POLICIES}/{ns}")

    async def get_policies(self, ns: naming.NamespaceName) -> dict[str, Any]:
        found = await self._get_json(f"{POLICIES}/{ns}")
        if found is None:
            raise errors.NotFoundError("Namespace does not exist")
        value: dict[str, Any] = found[0]
        return value

    async def create_namespace(self, ns: naming.NamespaceName, policies: dict[str, Any]) -> None:
        if not await self.tenant_exists(ns.tenant):
            raise errors.NotFoundError("Tenant does not exist")
        await self._create(f"{POLICIES}/{ns}", policies, "Namespace")

    async def set_policies(self, ns: naming.NamespaceName, policies: dict[str, Any]) -> None:
        await self._update(f"{POLICIES}/{ns}", policies, "Namespace")

    async def delete_namespace(self, ns: naming.NamespaceName) -> None:
        if not await self.namespace_exists(ns):
            raise errors.NotFoundError("Namespace does not exist")
        await self.store.delete(f"{POLICIES}/{ns}")
        await self.store.delete_recursive(f"{PARTITIONED}/{ns}")

    # Topics

    async def get_partitions(self, topic: naming.TopicName) -> int:
        """Partition count of a partitioned topic; 0 when it is not partitioned."""
        found = await self._get_json(self._partitioned_path(topic))
        return int(found[0]["partitions"]) if found else 0

    async def create_partitioned_topic(self, topic: naming.TopicName, partitions: int) -> None:
        await self._create(self._partitioned_path(topic), {"partitions": partitions},
                           "Partitioned topic")

    async def update_partitioned_topic(self, topic: naming.TopicName, partitions: int) -> None:
        await self._update(self._partitioned_path(topic), {"partitions": partitions},
                           "Partitioned topic")

    async def delete_partitioned_topic(self, topic: naming.TopicName) -> None:
        try:
            await self.store.delete(self._partitioned_path(topic))
        except md_errors.NotFoundError as exc:
            raise errors.NotFoundError("Partitioned topic does not exist") from exc

    async def list_partitioned_topics(self, ns: naming.NamespaceName, domain: str) -> list[str]:
        names = await self.store.get_children(f"{PARTITIONED}/{ns}/{domain}")
        return [f"{domain}://{ns}/{name}" for name in names]

    async def list_persistent_topics(self, ns: naming.NamespaceName) -> list[str]:
        """Topics that have a managed ledger (i.e. were created and not deleted)."""
        names = await self.store.get_children(f"{MANAGED_LEDGERS}/{ns}/persistent")
        return [f"persistent://{ns}/{name}" for name in names]

    @staticmethod
    def _partitioned_path(topic: naming.TopicName) -> str:
        return f"{PARTITIONED}/{topic.tenant}/{topic.namespace}/{topic.domain.value}/{topic.local_name}"
