"""Who a client is to the proxy, and who the proxy says it is to brokers.

With `authenticationEnabled` the proxy authenticates each client's CONNECT
(token, basic, or the client certificate of its TLS port) with the same
providers as a broker; a refusal is answered with ERROR AuthenticationError
and the connection closes.

The CONNECT the proxy sends a broker for a client (relayed connections, and the
lookups of that client) is one of:
- the proxy has credentials (`brokerClientAuthenticationPlugin`): they
  authenticate the proxy, `original_principal` names the client's role (brokers
  accept it from a role in their `proxyRoles` and authorize both), and with
  `forwardAuthorizationCredentials` the client's own method and data go along
  as `original_auth_method` / `original_auth_data`;
- it has none: the client's own `auth_method_name` / `auth_data` pass through,
  so the broker authenticates the client itself (a client certificate cannot
  pass through a TLS proxy).
`original_*` fields a client sends are always dropped: only the proxy may set them.
"""

from __future__ import annotations

import dataclasses
import ssl
import time

from pulsar_common import client_auth
from pulsar_common.auth import credentials as auth_credentials
from pulsar_common.auth import service as auth_service
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_proxy import broker_client
from pulsar_proxy.config import ProxyConfig

ORIGINAL_FIELDS = ("original_principal", "original_auth_data", "original_auth_method")


@dataclasses.dataclass(frozen=True)
class ClientIdentity:
    """A client as the proxy knows it after CONNECT."""

    role: str | None
    method: str
    data: bytes


class ProxyIdentity:
    def __init__(self, conf: ProxyConfig) -> None:
        self.credentials = conf.broker_credentials
        self.forward_credentials = conf.forward_authorization_credentials
        self.authentication = (auth_service.AuthenticationService.from_settings(
            conf.authentication) if conf.authentication_enabled else None)

    def authenticate(self, connect: pb.CommandConnect,
                     ssl_object: ssl.SSLObject | None) -> ClientIdentity:
        """The client's identity; AuthenticationError when authentication refuses it."""
        method, data = connect.auth_method_name, connect.auth_data
        if self.authentication is None:
            return ClientIdentity(None, method, data)
        certificate = ssl_object.getpeercert() if ssl_object is not None else None
        found = self.authentication.authenticate(
            auth_credentials.Credentials(method, data, certificate or None), time.time())
        return ClientIdentity(found.role, method, data)

    def broker_connect(self, client_connect: pb.CommandConnect,
                       client: ClientIdentity) -> pb.CommandConnect:
        """The CONNECT to send a broker for this client (see the module docstring)."""
        connect = pb.CommandConnect()
        connect.CopyFrom(client_connect)
        connect.ClearField("proxy_to_broker_url")
        for name in ORIGINAL_FIELDS:
            connect.ClearField(name)
        if self.credentials is None:
            return connect
        connect.auth_method_name = self.credentials.method
        connect.auth_data = self.credentials.data
        if client.role is not None:
            connect.original_principal = client.role
        if self.forward_credentials and client.method:
            connect.original_auth_method = client.method
            connect.original_auth_data = client.data.decode(errors="replace")
        return connect

    def shares_pool(self, connect: pb.CommandConnect) -> bool:
        """Whether a broker CONNECT carries nothing of a client's own, so that the client's
        lookups may use the proxy's shared broker connections."""
        return identity_of(connect) == identity_of(self.own_connect())

    def own_connect(self) -> pb.CommandConnect:
        """The CONNECT of the proxy's shared connections (its own credentials only)."""
        return self.broker_connect(broker_client.connect_command(None),
                                   ClientIdentity(None, "", b""))


def identity_of(connect: pb.CommandConnect) -> tuple[str, bytes, str, str, str]:
    return (connect.auth_method_name, connect.auth_data, connect.original_principal,
            connect.original_auth_method, connect.original_auth_data)


def credentials_of(connect: pb.CommandConnect) -> client_auth.Credentials | None:
    """What a broker's AUTH_CHALLENGE is answered with on a connection opened with connect."""
    if not connect.auth_method_name:
        return None
    return client_auth.Credentials(connect.auth_method_name, connect.auth_data)
