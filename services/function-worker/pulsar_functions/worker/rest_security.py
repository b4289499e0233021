"""Authentication and authorization of the worker's REST API, as Apache's worker decides them.

With `authenticationEnabled`, a request authenticates by `Authorization:
Bearer <token>` or `Basic <base64>` (the providers of
`authenticationProviders`), else gets 401. With `authorizationEnabled`, a
call on `/admin/v3/functions/{tenant}/{namespace}/...` needs a superuser, an
admin of the tenant, or the namespace's `functions` permission (Apache's
rule, read from the tenant and namespace records the brokers keep in the
same metadata store); the worker's cluster routes need a superuser; else 403.

Brokers pass the client's own Authorization header on, so the worker
decides on the client's role. A role in `proxyRoles` may name the client it
forwards in `X-Original-Principal`; both roles must then be allowed, as
brokers treat proxies.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web
from aiohttp.typedefs import Middleware
from pulsar_broker import errors as broker_errors
from pulsar_broker import resources
from pulsar_broker.security import authorization as authz
from pulsar_common import naming
from pulsar_common.auth import service as auth_service
from pulsar_common.auth.errors import AuthenticationError
from pulsar_common.metadata import api

from pulsar_functions.worker import config
from pulsar_functions.worker.app_keys import reason

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

ORIGINAL_PRINCIPAL_HEADER = "X-Original-Principal"
FUNCTIONS_PREFIX = "/admin/v3/functions/"
#: Paths anyone may read (health checks).
OPEN_PATHS = frozenset({"/status.html"})


class Authorizer:
    """Apache's rule for functions, over the brokers' tenant and namespace records."""

    def __init__(self, conf: config.WorkerConfig, store: api.MetadataStore) -> None:
        self.superusers = frozenset(conf.super_user_roles)
        self.resources = resources.PulsarResources(store)

    async def grants(self, namespace: naming.NamespaceName) -> authz.Grants:
        try:
            tenant = await self.resources.get_tenant(namespace.tenant)
        except broker_errors.NotFoundError:
            tenant = None
        try:
            policies = await self.resources.get_policies(namespace)
        except broker_errors.NotFoundError:
            policies = None
        return authz.Grants.of(self.superusers, tenant, policies)

    async def decide(self, roles: Sequence[str], path: str) -> authz.Decision:
        """Every role given (a proxy's and its client's) must be allowed."""
        namespace = namespace_of(path)
        grants = (authz.Grants(self.superusers) if namespace is None
                  else await self.grants(namespace))
        for role in roles:
            decision = (authz.superuser_operation(grants, role) if namespace is None
                        else authz.namespace_operation(grants, role,
                                                       authz.NamespaceOperation.FUNCTIONS))
            if not decision.allowed:
                return decision
        return authz.ALLOWED


def namespace_of(path: str) -> naming.NamespaceName | None:
    """The namespace of a functions call (None for the worker's own routes). A name that does
    not parse raises InvalidTopicNameError."""
    if not path.startswith(FUNCTIONS_PREFIX):
        return None
    parts = path[len(FUNCTIONS_PREFIX):].split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        return None
    return naming.NamespaceName.parse(f"{parts[0]}/{parts[1]}")


def _roles(authentication: auth_service.AuthenticationService, proxy_roles: frozenset[str],
           request: web.Request) -> tuple[str, ...]:
    given = authentication.http_credentials(request.headers.get("Authorization"), None)
    found = authentication.authenticate(given, time.time())
    original = request.headers.get(ORIGINAL_PRINCIPAL_HEADER)
    if original and found.role in proxy_roles:
        return (found.role, original)
    return (found.role,)


def middleware(conf: config.WorkerConfig, store: api.MetadataStore) -> Middleware | None:
    """The security middleware (None when authentication and authorization are both off)."""
    if not conf.authentication_enabled and not conf.authorization_enabled:
        return None
    authentication = (auth_service.AuthenticationService.from_settings(
        conf.authentication_settings) if conf.authentication_enabled else None)
    authorizer = Authorizer(conf, store) if conf.authorization_enabled else None
    proxy_roles = frozenset(conf.proxy_roles)

    @web.middleware
    async def security(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        roles: tuple[str, ...] = ()
        if authentication is not None:
            try:
                roles = _roles(authentication, proxy_roles, request)
            except AuthenticationError as exc:
                response = reason(401, f"Authentication required: {exc}")
                response.headers["WWW-Authenticate"] = 'Bearer realm="pulsar"'
                return response
        if authorizer is not None:
            if not roles:
                return reason(403, "Authentication is required")
            try:
                decision = await authorizer.decide(roles, request.path)
            except naming.InvalidTopicNameError:
                return reason(400, "Namespace name is not valid")
            if not decision.allowed:
                return reason(403, decision.reason)
        return await handler(request)

    return security
