"""The broker's security front: authentication from its settings, authorization over the
tenant and namespace records of the metadata store. The binary protocol (server/) and
the HTTP application (web/auth.py) both ask it; nothing else decides access.

When `authorizationEnabled` is off every authenticated role may do everything,
as in Apache.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pulsar_common import client_auth, naming
from pulsar_common import errors as common_errors
from pulsar_common.auth import credentials
from pulsar_common.auth import service as auth_service

from pulsar_broker import errors
from pulsar_broker.security import authorization as authz

if TYPE_CHECKING:
    from pulsar_broker.config import BrokerConfig
    from pulsar_broker.resources import PulsarResources
    from pulsar_broker.service.broker_service import BrokerService

log = logging.getLogger(__name__)

DEFAULT_AUTHORIZATION_PROVIDER = "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider"


def authentication_settings(config: BrokerConfig) -> auth_service.AuthenticationSettings:
    return auth_service.AuthenticationSettings(
        providers=config.authentication_providers,
        anonymous_user_role=config.anonymous_user_role,
        token_secret_key=config.token_secret_key, token_public_key=config.token_public_key,
        token_public_alg=config.token_public_alg, token_auth_claim=config.token_auth_claim,
        token_audience_claim=config.token_audience_claim, token_audience=config.token_audience,
        token_allowed_clock_skew_seconds=config.token_allowed_clock_skew_seconds,
        basic_auth_conf=config.basic_auth_conf)


def broker_client_headers(config: BrokerConfig) -> dict[str, str]:
    """HTTP headers of this broker's own requests to other brokers: its credentials from
    brokerClientAuthenticationPlugin/Parameters (none when unset)."""
    found = client_auth.credentials(config.broker_client_authentication_plugin,
                                    config.broker_client_authentication_parameters)
    header = None if found is None else found.http_authorization
    return {} if header is None else {"Authorization": header}


class SecurityGuard:
    def __init__(self, config: BrokerConfig, resources: PulsarResources,
                 clock: Callable[[], float] = time.time) -> None:
        if config.authorization_provider.strip() not in ("", DEFAULT_AUTHORIZATION_PROVIDER):
            raise common_errors.ConfigError(
                f"authorizationProvider {config.authorization_provider} is not supported; "
                f"only {DEFAULT_AUTHORIZATION_PROVIDER}")
        if config.authentication_refresh_check_seconds <= 0:
            raise common_errors.ConfigError("authenticationRefreshCheckSeconds must be positive")
        self.authentication_enabled = config.authentication_enabled
        self.authorization_enabled = config.authorization_enabled
        self.refresh_check_s = float(config.authentication_refresh_check_seconds)
        self.superusers = frozenset(config.super_user_roles)
        self.wildcards = config.authorization_allow_wildcards_matching
        self.proxy_roles = frozenset(config.proxy_roles)
        self.authentication = (auth_service.AuthenticationService.from_settings(
            authentication_settings(config)) if config.authentication_enabled else None)
        self.resources = resources
        self.clock = clock
        broker_client_headers(config)  # an unusable brokerClient* pair stops start-up
        if config.authorization_enabled and not config.authentication_enabled:
            log.warning("authorizationEnabled without authenticationEnabled: no client has a "
                        "role, so every topic operation and admin request is refused")

    def authenticate(self, given: credentials.Credentials) -> credentials.Authenticated | None:
        """The role of a connection or request; None when authentication is off."""
        if self.authentication is None:
            return None
        return self.authentication.authenticate(given, self.clock())

    async def grants(self, tenant: str,
                     namespace: naming.NamespaceName | None = None) -> authz.Grants:
        """What the store says about a tenant (and namespace); missing records grant nothing."""
        try:
            tenant_info = await self.resources.get_tenant(tenant)
        except errors.NotFoundError:
            tenant_info = None
        policies = None
        if namespace is not None:
            try:
                policies = await self.resources.get_policies(namespace)
            except errors.NotFoundError:
                policies = None
        return authz.Grants.of(self.superusers, tenant_info, policies, self.wildcards)

    def _settled(self, roles: Sequence[str] | None) -> authz.Decision | None:
        """The decision when no record needs reading: everyone may act with authorization
        off, no one without a role."""
        if not self.authorization_enabled:
            return authz.ALLOWED
        if not roles:
            return authz.Decision(False, "Authentication is required")
        return None

    @staticmethod
    def _every(roles: Sequence[str],
               decide: Callable[[str], authz.Decision]) -> authz.Decision:
        """Every role given (a proxy's and its client's) must be allowed."""
        for role in roles:
            decision = decide(role)
            if not decision.allowed:
                return decision
        return authz.ALLOWED

    async def topic(self, roles: Sequence[str] | None, topic: naming.TopicName,
                    operation: authz.TopicOperation,
                    subscription: str | None = None) -> authz.Decision:
        settled = self._settled(roles)
        if settled is not None or not roles:
            return settled or authz.ALLOWED
        grants = await self.grants(topic.tenant, topic.namespace_name)
        return self._every(roles, lambda role: authz.topic_operation(
            grants, role, topic, operation, subscription))

    async def namespace(self, roles: Sequence[str] | None, namespace: naming.NamespaceName,
                        operation: authz.NamespaceOperation) -> authz.Decision:
        settled = self._settled(roles)
        if settled is not None or not roles:
            return settled or authz.ALLOWED
        grants = await self.grants(namespace.tenant, namespace)
        return self._every(roles, lambda role: authz.namespace_operation(grants, role,
                                                                         operation))

    async def tenant(self, roles: Sequence[str] | None, tenant: str) -> authz.Decision:
        settled = self._settled(roles)
        if settled is not None or not roles:
            return settled or authz.ALLOWED
        grants = await self.grants(tenant)
        return self._every(roles, lambda role: authz.tenant_operation(grants, role))

    def superuser(self, roles: Sequence[str] | None) -> authz.Decision:
        settled = self._settled(roles)
        if settled is not None or not roles:
            return settled or authz.ALLOWED
        grants = authz.Grants(self.superusers)
        return self._every(roles, lambda role: authz.superuser_operation(grants, role))


_GUARDS: weakref.WeakKeyDictionary[BrokerService, SecurityGuard] = weakref.WeakKeyDictionary()


def of(service: BrokerService) -> SecurityGuard:
    """The guard of a broker service (one per service, shared by its listeners)."""
    guard = _GUARDS.get(service)
    if guard is None:
        guard = _GUARDS[service] = SecurityGuard(service.config, service.resources)
    return guard
