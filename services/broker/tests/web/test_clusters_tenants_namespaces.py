"""Clusters, tenants and namespaces through the admin REST v2 paths, with Apache's statuses."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Http


def test_standalone_cluster_is_listed_with_its_service_urls(http: Http) -> None:
    assert "standalone" in http.get("/admin/v2/clusters").json()
    data = http.get("/admin/v2/clusters/standalone").json()
    assert data["serviceUrl"].startswith("http://")
    assert data["brokerServiceUrl"].startswith("pulsar://")


def test_cluster_create_get_update_delete(http: Http, unique: str) -> None:
    path = f"/admin/v2/clusters/c-{unique}"
    assert http.put(path, {"serviceUrl": "http://a:8080"}).status == 204
    assert http.put(path, {"serviceUrl": "http://a:8080"}).status == 409
    assert http.get(path).json()["serviceUrl"] == "http://a:8080"
    assert http.post(path, {"serviceUrl": "http://b:8080"}).status == 204
    assert http.get(path).json()["serviceUrl"] == "http://b:8080"
    assert http.delete(path).status == 204
    missing = http.get(path)
    assert missing.status == 404
    assert missing.reason == "Cluster does not exist"


def test_invalid_cluster_name_is_a_precondition_failure(http: Http) -> None:
    assert http.put("/admin/v2/clusters/bad%20name", {}).status == 412


def test_tenant_lifecycle_and_conflicts(http: Http, unique: str) -> None:
    tenant = f"t-{unique}"
    info = {"adminRoles": ["admin"], "allowedClusters": ["standalone"]}
    assert http.put(f"/admin/v2/tenants/{tenant}", info).status == 204
    assert http.put(f"/admin/v2/tenants/{tenant}", info).status == 409
    assert tenant in http.get("/admin/v2/tenants").json()
    assert http.get(f"/admin/v2/tenants/{tenant}").json() == info
    assert http.post(f"/admin/v2/tenants/{tenant}",
                     {"adminRoles": [], "allowedClusters": ["standalone"]}).status == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").json()["adminRoles"] == []
    assert http.delete(f"/admin/v2/tenants/{tenant}").status == 204
    gone = http.get(f"/admin/v2/tenants/{tenant}")
    assert (gone.status, gone.reason) == (404, "Tenant does not exist")


def test_tenant_with_unknown_cluster_is_refused(http: Http, unique: str) -> None:
    reply = http.put(f"/admin/v2/tenants/t-{unique}", {"allowedClusters": ["nowhere"]})
    assert reply.status == 412


def test_tenant_with_namespaces_cannot_be_deleted(http: Http, unique: str) -> None:
    tenant = f"t-{unique}"
    http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]})
    assert http.put(f"/admin/v2/namespaces/{tenant}/ns").status == 204
    refused = http.delete(f"/admin/v2/tenants/{tenant}")
    assert (refused.status, refused.reason) == (409, "The tenant still has active namespaces")
    assert http.delete(f"/admin/v2/namespaces/{tenant}/ns").status == 204
    assert http.delete(f"/admin/v2/tenants/{tenant}").status == 204


def test_namespace_create_with_bundles_and_policies(http: Http, unique: str) -> None:
    ns = f"public/ns-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}", {"bundles": {"numBundles": 8}}).status == 204
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 409
    assert ns in http.get("/admin/v2/namespaces/public").json()
    policies = http.get(f"/admin/v2/namespaces/{ns}").json()
    assert policies["bundles"]["numBundles"] == 8
    assert len(policies["bundles"]["boundaries"]) == 9
    assert policies["replication_clusters"] == ["standalone"]


def test_namespace_of_unknown_tenant_is_not_found(http: Http, unique: str) -> None:
    assert http.put(f"/admin/v2/namespaces/nobody-{unique}/ns").status == 404
    assert http.get(f"/admin/v2/namespaces/nobody-{unique}").status == 404
    assert http.get(f"/admin/v2/namespaces/public/none-{unique}").status == 404


def test_simple_namespace_policies_set_get_remove(http: Http, unique: str) -> None:
    ns = f"/admin/v2/namespaces/public/pol-{unique}"
    http.put(ns)
    assert http.get(ns + "/retention").status == 204
    retention = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert http.post(ns + "/retention", retention).status == 204
    assert http.get(ns + "/retention").json() == retention
    assert http.post(ns + "/messageTTL", 3600).status == 204
    assert http.get(ns + "/messageTTL").json() == 3600
    assert http.delete(ns + "/messageTTL").status == 204
    assert http.get(ns + "/messageTTL").status == 204
    assert http.post(ns + "/deduplication", True).status == 204
    assert http.get(ns).json()["deduplicationEnabled"] is True
    assert http.get(ns + "/schemaCompatibilityStrategy").json() == "FULL"
    assert http.put(ns + "/schemaCompatibilityStrategy", "BACKWARD").status == 204
    assert http.get(ns + "/schemaCompatibilityStrategy").json() == "BACKWARD"
    persistence = {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
                   "managedLedgerMaxMarkDeleteRate": 0.0}
    assert http.post(ns + "/persistence", persistence).status == 204
    assert http.get(ns + "/persistence").json() == persistence
    assert http.post(ns + "/persistence", {**persistence, "bookkeeperAckQuorum": 2}).status == 400
    quota = {"limitSize": 1024, "limitTime": -1, "policy": "producer_exception"}
    assert http.call("POST", ns + "/backlogQuota?backlogQuotaType=destination_storage",
                     quota).status == 204
    assert http.get(ns + "/backlogQuotaMap").json() == {"destination_storage": quota}


def test_auto_topic_creation_override_makes_topics_partitioned(http: Http, unique: str) -> None:
    ns = f"/admin/v2/namespaces/public/auto-{unique}"
    http.put(ns)
    override = {"allowAutoTopicCreation": True, "topicType": "partitioned",
                "defaultNumPartitions": 3}
    assert http.post(ns + "/autoTopicCreation", override).status == 204
    assert http.post(ns + "/autoTopicCreation", {"allowAutoTopicCreation": True,
                                                 "topicType": "bogus"}).status == 400
    topic = f"/admin/v2/persistent/public/auto-{unique}/fresh/partitions"
    assert http.get(topic + "?checkAllowAutoCreation=true").json() == {"partitions": 3}


def test_namespace_with_topics_needs_force_to_delete(http: Http, unique: str) -> None:
    ns = f"public/full-{unique}"
    http.put(f"/admin/v2/namespaces/{ns}")
    assert http.put(f"/admin/v2/persistent/{ns}/a-topic").status == 204
    refused = http.delete(f"/admin/v2/namespaces/{ns}")
    assert (refused.status, refused.reason) == (409, "Cannot delete non empty namespace")
    assert http.call("DELETE", f"/admin/v2/namespaces/{ns}?force=true").status == 204
    assert http.get(f"/admin/v2/namespaces/{ns}").status == 404


def test_forced_tenant_delete_removes_its_namespaces_and_topics(http: Http, unique: str) -> None:
    tenant = f"t-{unique}"
    http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["standalone"]})
    http.put(f"/admin/v2/namespaces/{tenant}/a")
    http.put(f"/admin/v2/namespaces/{tenant}/b")
    assert http.put(f"/admin/v2/persistent/{tenant}/a/topic").status == 204
    assert http.call("DELETE", f"/admin/v2/tenants/{tenant}?force=true").status == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").status == 404
    assert tenant not in http.get("/admin/v2/tenants").json()


def test_namespace_bundles(http: Http, unique: str) -> None:
    http.put(f"/admin/v2/namespaces/public/bundles-{unique}", {"bundles": {"numBundles": 2}})
    bundles = http.get(f"/admin/v2/namespaces/public/bundles-{unique}/bundles").json()
    assert bundles == {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}
