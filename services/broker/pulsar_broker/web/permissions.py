"""`/admin/v2/namespaces/{t}/{ns}/permissions` and topic permissions: who may produce,
consume, run functions... in a namespace or on one topic.

Grants live in the namespace's policies as Apache's `auth_policies`
(`namespace_auth`: role -> actions; `destination_auth`: topic -> role ->
actions; `subscription_auth_roles`: subscription -> roles) and are changed with
a compare-and-set on the policies record, so concurrent grants never lose one
another. Only tenant admins and superusers reach these routes (web/auth.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web
from pulsar_common import naming
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.security import authorization as authz
from pulsar_broker.web import rest

routes = web.RouteTableDef()

NS = "/admin/v2/namespaces/{tenant}/{namespace}/permissions"
TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}/permissions"
#: Attempts of a permissions change that races with other policy writes.
CAS_ATTEMPTS_MAX = 20

AuthPolicies = dict[str, Any]


def auth_policies(policies: dict[str, Any]) -> AuthPolicies:
    auth = policies.get("auth_policies") or {}
    return {"namespace_auth": dict(auth.get("namespace_auth") or {}),
            "destination_auth": dict(auth.get("destination_auth") or {}),
            "subscription_auth_roles": dict(auth.get("subscription_auth_roles") or {})}


async def _change(request: web.Request, ns: naming.NamespaceName,
                  change: Callable[[AuthPolicies], None]) -> None:
    """Apply change to the namespace's auth_policies with a compare-and-set."""
    store = rest.service(request).resources.store
    path = f"{resources.POLICIES}/{ns}"
    for _ in range(CAS_ATTEMPTS_MAX):
        found = await store.get(path)
        if found is None:
            raise errors.NotFoundError("Namespace does not exist")
        policies = json.loads(found.value)
        auth = auth_policies(policies)
        change(auth)
        policies["auth_policies"] = auth
        try:
            await store.put(path, json.dumps(policies, sort_keys=True).encode(),
                            found.stat.version)
            return
        except md_errors.BadVersionError:
            continue
    raise errors.ConflictError("Namespace policies were modified concurrently, try again")


async def _actions(request: web.Request) -> list[str]:
    try:
        return authz.check_actions(await rest.body_json(request, []))
    except ValueError as exc:
        raise errors.InvalidRequestError(str(exc)) from exc


def _role(request: web.Request) -> str:
    role = request.match_info["role"]
    if not role.strip():
        raise errors.InvalidRequestError("Role must not be empty")
    return role


@routes.get(NS)
async def get_namespace_permissions(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    policies = await rest.service(request).resources.get_policies(ns)
    return rest.ok_json(auth_policies(policies)["namespace_auth"])


@routes.post(NS + "/{role}")
async def grant_on_namespace(request: web.Request) -> web.Response:
    ns, role, actions = rest.namespace_name(request), _role(request), await _actions(request)

    def grant(auth: AuthPolicies) -> None:
        auth["namespace_auth"][role] = actions

    await _change(request, ns, grant)
    return rest.no_content()


@routes.delete(NS + "/{role}")
async def revoke_on_namespace(request: web.Request) -> web.Response:
    ns, role = rest.namespace_name(request), _role(request)
    await _change(request, ns, lambda auth: auth["namespace_auth"].pop(role, None))
    return rest.no_content()


@routes.get(NS + "/subscription")
async def get_subscription_permissions(request: web.Request) -> web.Response:
    """Subscription -> the roles allowed to use it."""
    ns = rest.namespace_name(request)
    policies = await rest.service(request).resources.get_policies(ns)
    return rest.ok_json(auth_policies(policies)["subscription_auth_roles"])


@routes.post(NS + "/subscription/{subscription}")
async def grant_on_subscription(request: web.Request) -> web.Response:
    """Only these roles may use the subscription (body: a JSON list of roles)."""
    ns, subscription = rest.namespace_name(request), request.match_info["subscription"]
    roles = await rest.body_json(request, [])
    if not isinstance(roles, list) or not all(isinstance(r, str) and r for r in roles):
        raise errors.InvalidRequestError("Body must be a JSON list of roles")

    def grant(auth: AuthPolicies) -> None:
        current = set(auth["subscription_auth_roles"].get(subscription) or ())
        auth["subscription_auth_roles"][subscription] = sorted(current | set(roles))

    await _change(request, ns, grant)
    return rest.no_content()


@routes.delete(NS + "/{subscription}/{role}")
async def revoke_on_subscription(request: web.Request) -> web.Response:
    ns, subscription, role = (rest.namespace_name(request), request.match_info["subscription"],
                              _role(request))

    def revoke(auth: AuthPolicies) -> None:
        remaining = set(auth["subscription_auth_roles"].get(subscription) or ()) - {role}
        if remaining:
            auth["subscription_auth_roles"][subscription] = sorted(remaining)
        else:
            auth["subscription_auth_roles"].pop(subscription, None)

    await _change(request, ns, revoke)
    return rest.no_content()


@routes.get(TOPIC)
async def get_topic_permissions(request: web.Request) -> web.Response:
    """The namespace's grants with the topic's own on top (as Apache answers)."""
    topic = rest.topic_name(request)
    policies = await rest.service(request).resources.get_policies(topic.namespace_name)
    auth = auth_policies(policies)
    merged = {role: list(actions) for role, actions in auth["namespace_auth"].items()}
    for role, actions in (auth["destination_auth"].get(str(topic)) or {}).items():
        merged[role] = sorted(set(merged.get(role, [])) | set(actions),
                              key=authz.ACTIONS.index)
    return rest.ok_json(merged)


@routes.post(TOPIC + "/{role}")
async def grant_on_topic(request: web.Request) -> web.Response:
    topic, role, actions = rest.topic_name(request), _role(request), await _actions(request)

    def grant(auth: AuthPolicies) -> None:
        auth["destination_auth"].setdefault(str(topic), {})[role] = actions

    await _change(request, topic.namespace_name, grant)
    return rest.no_content()


@routes.delete(TOPIC + "/{role}")
async def revoke_on_topic(request: web.Request) -> web.Response:
    topic, role = rest.topic_name(request), _role(request)
    policies = await rest.service(request).resources.get_policies(topic.namespace_name)
    if role not in (auth_policies(policies)["destination_auth"].get(str(topic)) or {}):
        raise errors.PreconditionFailedError("Permissions are not set at the topic level")

    def revoke(auth: AuthPolicies) -> None:
        roles = auth["destination_auth"].get(str(topic)) or {}
        roles.pop(role, None)
        if not roles:
            auth["destination_auth"].pop(str(topic), None)

    await _change(request, topic.namespace_name, revoke)
    return rest.no_content()


