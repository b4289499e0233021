"""Schema-related admin behaviour on the shared standalone: a deleted topic takes its schema
with it, and the namespace's schema policies have their own endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Http


def test_deleting_a_topic_deletes_its_schema(http: Http, unique: str) -> None:
    topic = f"public/default/schema-gone-{unique}"
    assert http.call("PUT", f"/admin/v2/persistent/{topic}").status == 204
    schema = {"type": "STRING", "schema": "", "properties": {}}
    assert http.call("POST", f"/admin/v2/schemas/{topic}/schema", schema).status == 200
    assert http.get(f"/admin/v2/schemas/{topic}/schema").status == 200
    assert http.call("DELETE", f"/admin/v2/persistent/{topic}").status == 204
    assert http.get(f"/admin/v2/schemas/{topic}/schema").status == 404


def test_deleting_a_partitioned_topic_deletes_its_schema(http: Http, unique: str) -> None:
    topic = f"public/default/schema-parted-{unique}"
    assert http.call("PUT", f"/admin/v2/persistent/{topic}/partitions", 2).status == 204
    schema = {"type": "STRING", "schema": "", "properties": {}}
    assert http.call("POST", f"/admin/v2/schemas/{topic}/schema", schema).status == 200
    assert http.call("DELETE", f"/admin/v2/persistent/{topic}/partitions").status == 204
    assert http.get(f"/admin/v2/schemas/{topic}/schema").status == 404


def test_schema_auto_update_and_validation_policies(http: Http, unique: str) -> None:
    namespace = f"public/schema-policies-{unique}"
    assert http.call("PUT", f"/admin/v2/namespaces/{namespace}").status == 204
    base = f"/admin/v2/namespaces/{namespace}"
    assert http.get(f"{base}/schemaValidationEnforced").json() is False
    assert http.call("POST", f"{base}/schemaValidationEnforced", True).status == 204
    assert http.get(f"{base}/schemaValidationEnforced").json() is True
    assert http.call("POST", f"{base}/isAllowAutoUpdateSchema", False).status == 204
    assert http.get(f"{base}/isAllowAutoUpdateSchema").json() is False
    policies = http.get(base).json()
    assert policies["schema_validation_enforced"] is True
    assert policies["is_allow_auto_update_schema"] is False
    assert http.call("POST", f"{base}/isAllowAutoUpdateSchema", "yes").status == 400
