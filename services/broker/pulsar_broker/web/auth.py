"""Authentication and authorization of every HTTP request, as one middleware.

Credentials come from `Authorization: Bearer <token>` or `Basic <base64>`, or
from the client certificate on the HTTPS port. A request that does not
authenticate is answered 401; an authenticated role without the right the
route needs (security.http_rules) is answered 403, both with Apache's
`{"reason": ...}`. A proxy (a role in `proxyRoles`) may name the client it
forwards in `X-Original-Principal`; both roles must then be allowed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware
from pulsar_common import naming
from pulsar_common.auth import credentials
from pulsar_common.auth.errors import AuthenticationError

from pulsar_broker.security import authorization as authz
from pulsar_broker.security import guard as security_guard
from pulsar_broker.security import http_rules
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Where a handler finds the authenticated role (absent when authentication is off).
ROLE = "pulsar.role"
ORIGINAL_PRINCIPAL_HEADER = "X-Original-Principal"


def _peer_certificate(request: web.Request) -> credentials.PeerCertificate | None:
    transport = request.transport
    ssl_object = None if transport is None else transport.get_extra_info("ssl_object")
    return (ssl_object.getpeercert() or None) if ssl_object is not None else None


def _roles(guard: security_guard.SecurityGuard,
           request: web.Request) -> tuple[str, ...] | None:
    """The request's roles; None when authentication is off. Raises AuthenticationError."""
    if guard.authentication is None:
        return None
    given = guard.authentication.http_credentials(request.headers.get("Authorization"),
                                                  _peer_certificate(request))
    found = guard.authenticate(given)
    assert found is not None
    request[ROLE] = found.role
    original = request.headers.get(ORIGINAL_PRINCIPAL_HEADER)
    if original and found.role in guard.proxy_roles:
        return (found.role, original)
    return (found.role,)


async def _decide(guard: security_guard.SecurityGuard, rule: http_rules.Rule,
                  roles: tuple[str, ...] | None, request: web.Request) -> authz.Decision:
    scope = rule.scope
    if scope is http_rules.Scope.AUTHENTICATED:
        return authz.ALLOWED
    if scope is http_rules.Scope.TOPIC and rule.topic_operation is not None:
        subscription = request.match_info.get("subscription")
        return await guard.topic(roles, rest.topic_name(request), rule.topic_operation,
                                 subscription)
    if scope is http_rules.Scope.NAMESPACE and rule.namespace_operation is not None:
        return await guard.namespace(roles, _namespace(request), rule.namespace_operation)
    tenant = request.match_info.get("tenant")
    if scope is http_rules.Scope.TENANT and tenant is not None:
        return await guard.tenant(roles, rest.check_name(tenant, "Tenant"))
    return guard.superuser(roles)


def _namespace(request: web.Request) -> naming.NamespaceName:
    if "tenant" in request.match_info:
        return rest.namespace_name(request)
    # /admin/v3/functions/{tenant}/{namespace}/...: a sub-application matching any tail.
    parts = request.path.split("/")
    try:
        return naming.NamespaceName.parse(f"{parts[4]}/{parts[5]}")
    except naming.InvalidTopicNameError as exc:
        raise rest.InvalidNameError("Namespace name is not valid") from exc


def middleware(service: BrokerService) -> Middleware | None:
    """The security middleware of service's HTTP application (None when both
    authenticationEnabled and authorizationEnabled are off)."""
    guard = security_guard.of(service)
    if not guard.authentication_enabled and not guard.authorization_enabled:
        return None

    @web.middleware
    async def security(request: web.Request, handler: Handler) -> web.StreamResponse:
        resource = request.match_info.route.resource
        canonical = resource.canonical if resource is not None else ""
        rule = http_rules.rule_for(request.method, canonical, request.path)
        if rule.scope is http_rules.Scope.OPEN:
            return await handler(request)
        try:
            roles = _roles(guard, request)
        except AuthenticationError as exc:
            response = rest.error_json(401, f"Authentication required: {exc}")
            response.headers["WWW-Authenticate"] = 'Bearer realm="pulsar"'
            return response
        if resource is None and not request.path.startswith("/admin/v3/functions/"):
            return await handler(request)  # no such route: the router's 404
        decision = await _decide(guard, rule, roles, request)
        if not decision.allowed:
            return rest.error_json(403, decision.reason)
        return await handler(request)

    return security
