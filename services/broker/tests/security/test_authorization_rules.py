"""The pure authorization decisions and the HTTP route rules, table-driven."""

from __future__ import annotations

import pytest
from pulsar_broker.security import authorization as authz
from pulsar_broker.security import http_rules
from pulsar_common import naming

TOPIC = naming.TopicName.parse("persistent://acme/ns/orders")
PARTITION = TOPIC.partition(3)
OTHER = naming.TopicName.parse("persistent://acme/ns/other")

GRANTS = authz.Grants.of(
    ["root"], {"adminRoles": ["acme-admin"]},
    {"auth_policies": {
        "namespace_auth": {"ns-writer": ["produce"], "ns-reader": ["consume"],
                           "fn": ["functions"]},
        "destination_auth": {str(TOPIC): {"topic-reader": ["consume"]}},
        "subscription_auth_roles": {"billing": ["ns-reader"]}}})

Op = authz.TopicOperation


@pytest.mark.parametrize("role,topic,operation,subscription,allowed", [
    ("root", TOPIC, Op.ADMIN, None, True),
    ("acme-admin", TOPIC, Op.ADMIN, None, True),
    ("acme-admin", TOPIC, Op.PRODUCE, None, True),
    ("ns-writer", TOPIC, Op.PRODUCE, None, True),
    ("ns-writer", TOPIC, Op.CONSUME, "s", False),
    ("ns-writer", TOPIC, Op.LOOKUP, None, True),
    ("ns-writer", TOPIC, Op.ADMIN, None, False),
    ("ns-reader", TOPIC, Op.CONSUME, "billing", True),
    ("ns-reader", TOPIC, Op.PRODUCE, None, False),
    ("topic-reader", TOPIC, Op.CONSUME, "s", True),
    ("topic-reader", PARTITION, Op.CONSUME, "s", True),
    ("topic-reader", OTHER, Op.CONSUME, "s", False),
    ("topic-reader", TOPIC, Op.CONSUME, "billing", False),
    ("topic-reader", OTHER, Op.LOOKUP, None, False),
    ("fn", TOPIC, Op.LOOKUP, None, False),
    ("stranger", TOPIC, Op.LOOKUP, None, False),
])
def test_topic_operations(role: str, topic: naming.TopicName, operation: authz.TopicOperation,
                          subscription: str | None, allowed: bool) -> None:
    decision = authz.topic_operation(GRANTS, role, topic, operation, subscription)
    assert decision.allowed is allowed
    assert decision.allowed or decision.reason


@pytest.mark.parametrize("role,operation,allowed", [
    ("acme-admin", authz.NamespaceOperation.ADMIN, True),
    ("ns-reader", authz.NamespaceOperation.GET_TOPICS, True),
    ("ns-writer", authz.NamespaceOperation.GET_TOPICS, False),
    ("fn", authz.NamespaceOperation.FUNCTIONS, True),
    ("fn", authz.NamespaceOperation.ADMIN, False),
    ("ns-writer", authz.NamespaceOperation.FUNCTIONS, False),
])
def test_namespace_operations(role: str, operation: authz.NamespaceOperation,
                              allowed: bool) -> None:
    assert authz.namespace_operation(GRANTS, role, operation).allowed is allowed


def test_missing_records_grant_nothing_but_superusers_keep_their_rights() -> None:
    empty = authz.Grants.of(["root"], None, None)
    assert not authz.topic_operation(empty, "anyone", TOPIC, Op.LOOKUP).allowed
    assert authz.topic_operation(empty, "root", TOPIC, Op.ADMIN).allowed
    assert not authz.tenant_operation(empty, "anyone").allowed
    assert not authz.superuser_operation(empty, "acme-admin").allowed


def test_actions_are_apaches() -> None:
    assert authz.check_actions(["consume", "produce", "consume"]) == ["produce", "consume"]
    for bad in (["fly"], "produce", [1]):
        with pytest.raises(ValueError):
            authz.check_actions(bad)


TOPIC_ROUTE = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
NS_ROUTE = "/admin/v2/namespaces/{tenant}/{namespace}"


@pytest.mark.parametrize("method,canonical,path,expected", [
    ("GET", "/status.html", "/status.html", http_rules.OPEN),
    ("GET", "/metrics", "/metrics", http_rules.OPEN),
    ("GET", "/admin/v2/brokers/ready", "/admin/v2/brokers/ready", http_rules.OPEN),
    ("GET", "/admin/v2/brokers/health", "/admin/v2/brokers/health", http_rules.SUPERUSER),
    ("GET", "/admin/v2/tenants", "/admin/v2/tenants", http_rules.SUPERUSER),
    ("PUT", "/admin/v2/tenants/{tenant}", "/admin/v2/tenants/x", http_rules.SUPERUSER),
    ("GET", "/admin/v2/tenants/{tenant}", "/admin/v2/tenants/x", http_rules.SUPERUSER),
    ("GET", "/admin/v2/clusters", "/admin/v2/clusters", http_rules.AUTHENTICATED),
    ("PUT", "/admin/v2/clusters/{cluster}", "/admin/v2/clusters/c", http_rules.SUPERUSER),
    ("GET", "/admin/v2/clusters/{cluster}", "/admin/v2/clusters/c", http_rules.SUPERUSER),
    ("POST", NS_ROUTE + "/retention", "", http_rules.TENANT),
    ("GET", NS_ROUTE + "/topics", "", http_rules.GET_TOPICS),
    ("GET", "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}", "",
     http_rules.GET_TOPICS),
    ("PUT", NS_ROUTE + "/{bundle:0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}}/unload", "",
     http_rules.TENANT),
    ("GET", TOPIC_ROUTE + "/stats", "", http_rules.LOOKUP),
    ("GET", TOPIC_ROUTE + "/partitions", "", http_rules.LOOKUP),
    ("PUT", TOPIC_ROUTE + "/partitions", "", http_rules.TOPIC_ADMIN),
    ("DELETE", TOPIC_ROUTE, "", http_rules.TOPIC_ADMIN),
    ("POST", TOPIC_ROUTE + "/subscription/{subscription}/skip_all", "", http_rules.CONSUME),
    ("GET", TOPIC_ROUTE + "/subscription/{subscription}/properties", "", http_rules.CONSUME),
    ("GET", TOPIC_ROUTE + "/examinemessage", "", http_rules.CONSUME),
    ("GET", TOPIC_ROUTE + "/messageid/{timestamp}", "", http_rules.CONSUME),
    ("PUT", TOPIC_ROUTE + "/properties", "", http_rules.TOPIC_ADMIN),
    ("GET", TOPIC_ROUTE + "/permissions", "", http_rules.TOPIC_ADMIN),
    ("GET", "/lookup/v2/topic/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}",
     "", http_rules.LOOKUP),
    ("POST", "/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema", "",
     http_rules.TOPIC_ADMIN),
    ("GET", "/admin/v2/schemas/{tenant}/{namespace}/{topic}/schema", "", http_rules.LOOKUP),
    ("POST", "", "/admin/v3/functions/acme/ns/fn", http_rules.FUNCTIONS),
    ("GET", "", "/admin/v3/functions/connectors", http_rules.SUPERUSER),
    ("GET", "/admin/v2/something/new", "/admin/v2/something/new", http_rules.SUPERUSER),
])
def test_route_rules(method: str, canonical: str, path: str, expected: http_rules.Rule) -> None:
    assert http_rules.rule_for(method, canonical, path or canonical) == expected


@pytest.mark.parametrize("granted,role,wildcards,matches", [
    ("app", "app", False, True),
    ("app-*", "app-orders", False, False),
    ("app-*", "app-orders", True, True),
    ("*.svc", "billing.svc", True, True),
    ("*.svc", "billing.svc.evil", True, False),
    ("app-*", "other", True, False),
    ("*", "anyone", True, True),
    ("*", "anyone", False, False),
])
def test_wildcard_role_matching(granted: str, role: str, wildcards: bool,
                                matches: bool) -> None:
    assert authz.role_matches(granted, role, wildcards) is matches
    grants = authz.Grants.of([], None, {"auth_policies": {"namespace_auth": {
        granted: ["produce"]}}}, wildcards=wildcards)
    assert authz.topic_operation(grants, role, TOPIC, Op.PRODUCE).allowed is matches


def test_prefix_subscription_auth_mode() -> None:
    grants = authz.Grants.of(["root"], {"adminRoles": ["boss"]}, {
        "subscription_auth_mode": "Prefix",
        "auth_policies": {"namespace_auth": {"app": ["consume"]}}})
    assert authz.topic_operation(grants, "app", TOPIC, Op.CONSUME, "app-orders").allowed
    refused = authz.topic_operation(grants, "app", TOPIC, Op.CONSUME, "orders")
    assert not refused.allowed and "prefixed by the authentication role" in refused.reason
    assert authz.topic_operation(grants, "boss", TOPIC, Op.CONSUME, "orders").allowed
