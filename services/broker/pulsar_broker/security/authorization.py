"""Authorization as Apache's PulsarAuthorizationProvider decides it, as pure functions.

A role may act when it is a superuser (`superUserRoles`), an admin of the
topic's tenant (the tenant's `adminRoles`), or holds the action the operation
needs in the namespace's `auth_policies`: on the whole namespace
(`namespace_auth`) or on the topic (`destination_auth`, keyed by the full topic
name; a partition is covered by its partitioned topic's grant). Consuming also
honours `subscription_auth_roles`: a subscription listed there is open to its
listed roles only; and with the namespace's `subscription_auth_mode` Prefix, a role
uses only subscriptions named after it (`<role>-...`); tenant admins are exempt.
A lookup needs produce or consume.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any

from pulsar_common import naming

from pulsar_broker import errors

#: Apache's AuthAction names, in the order its admin tools list them.
ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")


class AuthorizationError(errors.BrokerError):
    """The role may not do what it asked (403 over HTTP, AuthorizationError on the wire)."""

    http_status = 403


class TopicOperation(enum.Enum):
    """What is asked of a topic (Apache's TopicOperation, grouped by the action it needs)."""

    LOOKUP = "lookup"      # lookups, partitioned metadata, stats: produce or consume
    PRODUCE = "produce"
    CONSUME = "consume"    # subscribe, read, peek, skip, reset, subscriptions list
    ADMIN = "admin"        # create, delete, terminate, unload, partitions: tenant admins


class NamespaceOperation(enum.Enum):
    GET_TOPICS = "get_topics"  # listing topics: consume on the namespace
    FUNCTIONS = "functions"
    SOURCES = "sources"
    SINKS = "sinks"
    PACKAGES = "packages"
    ADMIN = "admin"


@dataclasses.dataclass(frozen=True)
class Grants:
    """What the metadata store says about one namespace's access."""

    superusers: frozenset[str] = frozenset()
    tenant_admins: frozenset[str] = frozenset()
    namespace_auth: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    destination_auth: Mapping[str, Mapping[str, frozenset[str]]] = dataclasses.field(
        default_factory=dict)
    subscription_auth_roles: Mapping[str, frozenset[str]] = dataclasses.field(
        default_factory=dict)
    #: Granted roles ending or starting with `*` match by prefix or suffix
    #: (authorizationAllowWildcardsMatching).
    wildcards: bool = False
    #: The namespace's subscriptionAuthMode is Prefix: a role may only use subscriptions
    #: whose names start with the role.
    subscription_prefix: bool = False

    @classmethod
    def of(cls, superusers: Iterable[str], tenant: Mapping[str, Any] | None,
           policies: Mapping[str, Any] | None, wildcards: bool = False) -> Grants:
        """From the tenant record (adminRoles) and the namespace policies (auth_policies);
        None for a record that does not exist."""
        auth = (policies or {}).get("auth_policies") or {}
        return cls(
            frozenset(superusers), frozenset((tenant or {}).get("adminRoles") or ()),
            _role_actions(auth.get("namespace_auth")),
            {topic: _role_actions(roles)
             for topic, roles in (auth.get("destination_auth") or {}).items()},
            {sub: frozenset(roles or ())
             for sub, roles in (auth.get("subscription_auth_roles") or {}).items()},
            wildcards, (policies or {}).get("subscription_auth_mode") == "Prefix")


def _role_actions(value: Any) -> dict[str, frozenset[str]]:
    if not isinstance(value, dict):
        return {}
    return {str(role): frozenset(actions or ()) for role, actions in value.items()}


@dataclasses.dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


ALLOWED = Decision(True)


def is_superuser(grants: Grants, role: str) -> bool:
    return role in grants.superusers


def is_tenant_admin(grants: Grants, role: str) -> bool:
    """Superusers administer every tenant."""
    return is_superuser(grants, role) or role in grants.tenant_admins


def role_matches(granted: str, role: str, wildcards: bool) -> bool:
    """Whether a granted role names role: exactly, or with wildcards on, `prefix*` or
    `*suffix` (Apache's authorizationAllowWildcardsMatching; a lone `*` is every role)."""
    if granted == role:
        return True
    if not wildcards or not granted:
        return False
    if granted.endswith("*"):
        return role.startswith(granted[:-1])
    if granted.startswith("*"):
        return role.endswith(granted[1:])
    return False


def _granted(by_role: Mapping[str, frozenset[str]], role: str, action: str,
             wildcards: bool) -> bool:
    if action in by_role.get(role, ()):
        return True
    return wildcards and any(action in actions and role_matches(granted, role, True)
                             for granted, actions in by_role.items())


def has_action(grants: Grants, role: str, topic: naming.TopicName | None, action: str) -> bool:
    if _granted(grants.namespace_auth, role, action, grants.wildcards):
        return True
    if topic is None:
        return False
    names = {str(topic), str(topic.partitioned_topic_name)}
    return any(_granted(grants.destination_auth.get(name, {}), role, action, grants.wildcards)
               for name in names)


def tenant_operation(grants: Grants, role: str) -> Decision:
    if is_tenant_admin(grants, role):
        return ALLOWED
    return Decision(False, "Don't have permission to administrate resources on this tenant")


def superuser_operation(grants: Grants, role: str) -> Decision:
    if is_superuser(grants, role):
        return ALLOWED
    return Decision(False, "This operation requires super-user access")


def topic_operation(grants: Grants, role: str, topic: naming.TopicName,
                    operation: TopicOperation, subscription: str | None = None) -> Decision:
    """Whether role may do operation on topic (through subscription, when consuming)."""
    if is_tenant_admin(grants, role):
        return ALLOWED
    refused = Decision(False, f"Client with role {role} is not authorized to "
                              f"{operation.value} on {topic}")
    if operation is TopicOperation.PRODUCE:
        return ALLOWED if has_action(grants, role, topic, "produce") else refused
    if operation is TopicOperation.CONSUME:
        if subscription:
            allowed_roles = grants.subscription_auth_roles.get(subscription)
            if allowed_roles and role not in allowed_roles:
                return Decision(False, f"Role {role} may not use subscription {subscription}")
            if grants.subscription_prefix and not subscription.startswith(role):
                return Decision(False, "The subscription name needs to be prefixed by the "
                                       f"authentication role, like {role}-xxxx for topic: "
                                       f"{topic}")
        return ALLOWED if has_action(grants, role, topic, "consume") else refused
    if operation is TopicOperation.LOOKUP:
        found = (has_action(grants, role, topic, "produce")
                 or has_action(grants, role, topic, "consume"))
        return ALLOWED if found else refused
    return Decision(False, "Don't have permission to administrate resources on this tenant")


def namespace_operation(grants: Grants, role: str, operation: NamespaceOperation) -> Decision:
    if is_tenant_admin(grants, role):
        return ALLOWED
    needed = {NamespaceOperation.GET_TOPICS: "consume"}.get(operation, operation.value)
    if operation is not NamespaceOperation.ADMIN and has_action(grants, role, None, needed):
        return ALLOWED
    return Decision(False, f"Client with role {role} is not authorized for "
                           f"{operation.value} on this namespace")


def check_actions(actions: Any) -> list[str]:
    """A permissions request's actions: a list of Apache's AuthAction names."""
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise ValueError("actions must be a JSON list of action names")
    unknown = sorted(set(actions) - set(ACTIONS))
    if unknown:
        raise ValueError(f"unknown actions {', '.join(unknown)}; expected {', '.join(ACTIONS)}")
    return sorted(set(actions), key=ACTIONS.index)
