"""Which right each admin REST route needs, as Apache's admin resources check it.

A route is named by its method and canonical path (aiohttp's resource pattern,
e.g. `/admin/v2/{domain}/{tenant}/{namespace}/{topic}/stats`). Anything not
listed here needs at least a tenant admin (when the path names a tenant) or a
superuser: a new route is closed until someone decides otherwise.
"""

from __future__ import annotations

import dataclasses
import enum
import re

from pulsar_broker.security import authorization as authz


class Scope(enum.Enum):
    OPEN = "open"                    # no credentials needed (probes, metrics)
    AUTHENTICATED = "authenticated"  # any authenticated role
    SUPERUSER = "superuser"
    TENANT = "tenant"                # tenant admin (or superuser)
    NAMESPACE = "namespace"          # namespace operation (tenant admin or an action)
    TOPIC = "topic"                  # topic operation (tenant admin or an action)


@dataclasses.dataclass(frozen=True)
class Rule:
    scope: Scope
    topic_operation: authz.TopicOperation | None = None
    namespace_operation: authz.NamespaceOperation | None = None


OPEN = Rule(Scope.OPEN)
AUTHENTICATED = Rule(Scope.AUTHENTICATED)
SUPERUSER = Rule(Scope.SUPERUSER)
TENANT = Rule(Scope.TENANT)
LOOKUP = Rule(Scope.TOPIC, authz.TopicOperation.LOOKUP)
CONSUME = Rule(Scope.TOPIC, authz.TopicOperation.CONSUME)
TOPIC_ADMIN = Rule(Scope.TOPIC, authz.TopicOperation.ADMIN)
GET_TOPICS = Rule(Scope.NAMESPACE, namespace_operation=authz.NamespaceOperation.GET_TOPICS)
FUNCTIONS = Rule(Scope.NAMESPACE, namespace_operation=authz.NamespaceOperation.FUNCTIONS)
PACKAGES = Rule(Scope.NAMESPACE, namespace_operation=authz.NamespaceOperation.PACKAGES)

#: Readiness probes and metrics scrapes need no credentials (Apache's status.html and
#: authenticateMetricsEndpoint=false).
_OPEN_PATHS = frozenset({"/status.html", "/metrics", "/metrics/", "/admin/v2/brokers/ready"})
_TOPIC = "/admin/v2/{domain}/{tenant}/{namespace}/{topic}"
_DOMAIN = re.compile(r"\{domain:[^}]*\}")
_BUNDLE = re.compile(r"\{bundle:[^}]*\}")
#: Topic routes by what follows the topic; the rest of them are for tenant admins.
_TOPIC_SUFFIXES: dict[tuple[str, str], Rule] = {
    ("GET", "/partitions"): LOOKUP,
    ("GET", "/stats"): LOOKUP,
    ("GET", "/partitioned-stats"): LOOKUP,
    ("GET", "/internalStats"): LOOKUP,
    ("GET", "/partitioned-internalStats"): LOOKUP,
    ("GET", "/lastMessageId"): CONSUME,
    ("GET", "/subscriptions"): CONSUME,
    ("GET", "/ledger/{ledger}/entry/{entry}"): CONSUME,
    ("GET", "/examinemessage"): CONSUME,  # Apache: PEEK_MESSAGES, granted with consume
    ("GET", "/messageid/{timestamp}"): CONSUME,
    ("PUT", "/backlogSize"): CONSUME,  # Apache: GET_BACKLOG_SIZE, granted with consume
    ("POST", "/all_subscription/expireMessages/{seconds}"): CONSUME,  # EXPIRE_MESSAGES
}
_SCHEMA = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
_SCHEMA_READS = frozenset({("GET", "/schema"), ("GET", "/schema/{version}"),
                           ("GET", "/schemas"), ("POST", "/compatibility"),
                           ("POST", "/version")})


def normalized(canonical: str) -> str:
    """The canonical path with the regex parts of its variables dropped."""
    return _BUNDLE.sub("{bundle}", _DOMAIN.sub("{domain}", canonical))


def rule_for(method: str, canonical: str, path: str) -> Rule:
    """The right a request needs; canonical is its route's pattern ('' when none matched)."""
    if path in _OPEN_PATHS:
        return OPEN
    if path.startswith("/admin/v3/functions/"):
        parts = path.split("/")
        return FUNCTIONS if len(parts) > 5 and parts[4] and parts[5] else SUPERUSER
    route = normalized(canonical)
    if route.startswith("/admin/v3/packages/{type}/{tenant}/{namespace}"):
        return PACKAGES  # as Apache: superuser, tenant admin or the namespace's `packages`
    if route.startswith(_TOPIC):
        suffix = route[len(_TOPIC):]
        if suffix.startswith("/subscription/"):
            return CONSUME
        return _TOPIC_SUFFIXES.get((method, suffix), TOPIC_ADMIN)
    if route.startswith("/lookup/v2/topic/"):
        return LOOKUP
    if route.startswith(_SCHEMA):
        return LOOKUP if (method, route[len(_SCHEMA):]) in _SCHEMA_READS else TOPIC_ADMIN
    if method == "GET" and route in ("/admin/v2/namespaces/{tenant}/{namespace}/topics",
                                     "/admin/v2/{domain}/{tenant}/{namespace}",
                                     "/admin/v2/{domain}/{tenant}/{namespace}/partitioned"):
        return GET_TOPICS
    if method == "GET" and route == "/admin/v2/clusters":
        return AUTHENTICATED  # as Apache; reading one cluster's record needs a superuser
    if route.startswith("/admin/v2/tenants"):
        return SUPERUSER  # as Apache: even reading one tenant's record
    if "{tenant}" in route:
        return TENANT
    return SUPERUSER
