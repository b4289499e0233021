"""Authentication and authorization of one binary-protocol connection.

CONNECT carries `auth_method_name` and `auth_data` (for TLS, the certificate
comes from the transport). A refused CONNECT is answered with ERROR
(AuthenticationError) and the connection closes, as Apache's broker does.
Credentials that expire (a JWT's `exp`) are checked every
`authenticationRefreshCheckSeconds`: once expired, the broker sends
AUTH_CHALLENGE; the client answers AUTH_RESPONSE with fresh credentials (the
official clients ask their token supplier again), which must prove the same
role. A connection still unrefreshed at the next check is closed, and so is, at once, a
client whose CONNECT did not announce `supports_auth_refresh`.

A proxy (a role in `proxyRoles`) names the client it forwards in
`original_principal`; both roles must then be authorized for every command.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pulsar_common import naming
from pulsar_common.auth import credentials
from pulsar_common.auth.errors import AuthenticationError
from pulsar_common.wire import commands as replies
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.security import authorization as authz
from pulsar_broker.security import guard as security_guard
from pulsar_broker.server import commands

if TYPE_CHECKING:
    from pulsar_broker.server.connection import ServerConnection

log = logging.getLogger(__name__)
T = pb.BaseCommand

#: What the broker sends as challenge data when it asks for fresh credentials (Apache's).
REFRESH_CHALLENGE = b"refresh"


class ConnectionSecurity:
    def __init__(self, cnx: ServerConnection) -> None:
        self.cnx = cnx
        self.guard = security_guard.of(cnx.service)
        self.authenticated: credentials.Authenticated | None = None
        #: The roles every command is authorized for (None: authentication is off).
        self.roles: tuple[str, ...] | None = None
        self._refresh: asyncio.TimerHandle | None = None
        self._challenge_pending = False
        #: The client said it answers AUTH_CHALLENGE (CONNECT feature_flags); others are
        #: closed once their credentials expire, as Apache does.
        self._refreshable = False

    def _peer_certificate(self) -> credentials.PeerCertificate | None:
        transport = self.cnx.transport
        ssl_object = None if transport is None else transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return None
        certificate = ssl_object.getpeercert()
        return certificate or None

    def _credentials(self, method: str, data: bytes) -> credentials.Credentials:
        return credentials.Credentials(method, data, self._peer_certificate())

    def connect(self, connect: pb.CommandConnect) -> bool:
        """Authenticate a CONNECT; on refusal the client is told why and the connection
        closes (False)."""
        if not self.guard.authentication_enabled:
            return True
        try:
            found = self.guard.authenticate(self._credentials(
                connect.auth_method_name, connect.auth_data))
            assert found is not None
            roles: tuple[str, ...] = (found.role,)
            if connect.HasField("original_principal") and connect.original_principal:
                if found.role not in self.guard.proxy_roles:
                    raise AuthenticationError(
                        "original_principal is accepted only from a role in proxyRoles")
                roles = (found.role, connect.original_principal)
        except AuthenticationError as exc:
            self._refuse(f"Unable to authenticate: {exc}")
            return False
        self.authenticated, self.roles = found, roles
        self._refreshable = connect.feature_flags.supports_auth_refresh
        log.info("%s authenticated as %s (%s)", self.cnx.remote_address, ", ".join(roles),
                 found.method)
        self._schedule_refresh_check()
        return True

    def _refuse(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self.cnx.remote_address, reason)
        self.cnx.write(replies.error(0, pb.AuthenticationError, reason))
        self.cnx.close()

    # Refresh of expiring credentials

    def _schedule_refresh_check(self) -> None:
        if self.authenticated is None or self.authenticated.expires_at_s is None:
            return
        self._refresh = asyncio.get_running_loop().call_later(self.guard.refresh_check_s,
                                                              self._refresh_check)

    def _refresh_check(self) -> None:
        self._refresh = None
        if self.cnx.transport is None or self.authenticated is None:
            return
        if self._challenge_pending:
            self._refuse("credentials expired and were not refreshed in time")
            return
        if self.authenticated.expired(self.guard.clock()):
            if not self._refreshable:
                self._refuse("credentials expired and this client cannot refresh them")
                return
            self._challenge_pending = True
            challenge = pb.CommandAuthChallenge(
                server_version=commands.SERVER_VERSION,
                protocol_version=commands.PROTOCOL_VERSION,
                challenge=pb.AuthData(auth_method_name=self.authenticated.method,
                                      auth_data=REFRESH_CHALLENGE))
            self.cnx.write(T(type=T.AUTH_CHALLENGE, authChallenge=challenge))
        self._schedule_refresh_check()

    def auth_response(self, response: pb.CommandAuthResponse) -> None:
        """Fresh credentials from the client: they must prove the same role."""
        if self.authenticated is None:
            self._refuse("AUTH_RESPONSE without an authenticated connection")
            return
        data = response.response
        try:
            found = self.guard.authenticate(self._credentials(
                data.auth_method_name or self.authenticated.method, data.auth_data))
            assert found is not None
        except AuthenticationError as exc:
            self._refuse(f"Unable to refresh credentials: {exc}")
            return
        if found.role != self.authenticated.role:
            self._refuse(f"refreshed credentials are for role {found.role}, "
                         f"not {self.authenticated.role}")
            return
        self.authenticated = found
        self._challenge_pending = False
        log.info("%s refreshed its credentials (%s)", self.cnx.remote_address, found.role)

    def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
            self._refresh = None

    # Authorization

    async def check_topic(self, topic: naming.TopicName, operation: authz.TopicOperation,
                          subscription: str | None = None) -> None:
        """Raise AuthorizationError unless this connection's roles may do operation on topic."""
        decision = await self.guard.topic(self.roles, topic, operation, subscription)
        if not decision.allowed:
            raise authz.AuthorizationError(decision.reason)

    async def check_namespace(self, namespace: naming.NamespaceName,
                              operation: authz.NamespaceOperation) -> None:
        decision = await self.guard.namespace(self.roles, namespace, operation)
        if not decision.allowed:
            raise authz.AuthorizationError(decision.reason)

    async def topic_refusal(self, topic: str, operation: authz.TopicOperation) -> str | None:
        """Why this connection may not do operation on the named topic (None: it may, or
        the name is invalid and the command's own handling answers that)."""
        try:
            name = naming.TopicName.parse(topic)
        except naming.InvalidTopicNameError:
            return None
        decision = await self.guard.topic(self.roles, name, operation)
        return None if decision.allowed else decision.reason
