"""Pulsar admin REST v2 adapter (aiohttp): runs AdminCalls, reads tenants and policies.

For a cluster with spec.auth the calls carry its operator token (never an open port);
with spec.tls they go to the HTTPS port and check its certificate against the CA of
spec.tls's Secret (see `credentials_for`).

Every call has a timeout; connection failures and error statuses become
AdminApiError with a `retriable` flag. 404 on a read means "absent" (None).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import ssl
from typing import Any, Self

import aiohttp

from pulsar_operator import cluster_spec, errors, kube
from pulsar_operator.plan import AdminCall, ObjectRef

REQUEST_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True)
class AdminCredentials:
    """What the operator's admin calls carry for a cluster with spec.auth / spec.tls: its
    superuser token (Authorization: Bearer) and the CA its HTTPS certificate is checked
    against (the host name too: the certificate must name the brokers' Service)."""

    token: str | None = None
    ca_pem: str | None = None

    def headers(self) -> dict[str, str]:
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.ca_pem is None:
            return None
        return ssl.create_default_context(cadata=self.ca_pem)


NO_CREDENTIALS = AdminCredentials()


def secret_value(secret: dict[str, Any] | None, key: str) -> str | None:
    """A Secret's key, decoded (data is base64, stringData plain); None when absent."""
    if not secret:
        return None
    if key in (secret.get("stringData") or {}):
        return str(secret["stringData"][key])
    encoded = (secret.get("data") or {}).get(key)
    return None if encoded is None else base64.b64decode(encoded).decode().strip()


class AdminClient:
    def __init__(self, web_service_url: str, session: aiohttp.ClientSession | None = None, *,
                 credentials: AdminCredentials = NO_CREDENTIALS) -> None:
        self.web_service_url = web_service_url.rstrip("/")
        self._own_session = session is None
        self._headers = credentials.headers()
        context = credentials.ssl_context()
        connector = None if context is None else aiohttp.TCPConnector(ssl=context)
        self._session = session or aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_session:
            await self._session.close()

    async def _send(self, method: str, path: str, body: Any, params: tuple[tuple[str, str], ...]) -> tuple[int, str]:
        url = self.web_service_url + path
        kwargs: dict[str, Any] = {"params": list(params)} if params else {}
        if self._headers:
            kwargs["headers"] = self._headers
        if body is not None:
            kwargs["json"] = body
        try:
            async with self._session.request(method, url, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
                                             **kwargs) as resp:
                return resp.status, await resp.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise errors.AdminApiError(method, path, None, f"cannot reach {self.web_service_url}: {exc!r}") from exc

    async def call(self, call: AdminCall) -> None:
        status, text = await self._send(call.method, call.path, call.body, call.params)
        if status >= 300 and status not in call.ok_statuses:
            raise errors.AdminApiError(call.method, call.path, status, text[:300])

    async def run(self, calls: list[AdminCall] | tuple[AdminCall, ...]) -> None:
        """In order: later calls (policies) need earlier ones (the namespace) to exist."""
        for call in calls:
            await self.call(call)

    async def get(self, path: str) -> Any:
        status, text = await self._send("GET", path, None, ())
        if status == 404:
            return None
        if status >= 300:
            raise errors.AdminApiError("GET", path, status, text[:300])
        return json.loads(text) if text else {}


async def credentials_for(spec: cluster_spec.ClusterSpec, client: kube.KubeClient) -> AdminCredentials:
    """The operator's credentials for a cluster, read from the Secrets its spec names;
    AdminApiError (retriable) while a Secret or key is missing."""
    token = ca_pem = None
    auth, tls = spec.auth, spec.tls
    if auth.enabled and auth.operator_token is not None:
        token = await _read(client, spec.namespace, auth.operator_token.name,
                            auth.operator_token.key)
    if tls.enabled:
        ca_pem = await _read(client, spec.namespace, tls.secret_name, tls.ca_key)
    return AdminCredentials(token, ca_pem)


async def _read(client: kube.KubeClient, namespace: str, name: str, key: str) -> str:
    secret = await client.get(ObjectRef("v1", "Secret", namespace, name))
    value = secret_value(secret, key)
    if value is None:
        raise errors.AdminApiError("GET", f"secret {namespace}/{name}", None,
                                   f"key {key!r} of Secret {namespace}/{name} is not there (yet)")
    return value
