"""Client-side credentials from Apache's `authPlugin` / `authParams` pair, for every tool and
service that connects to a broker: pulsar-admin, pulsar-client, pulsar-perf (through the
official client), and the proxy's own connections to brokers (CONNECT auth fields and HTTP
headers).

Apache's class names and parameter forms:
- `org.apache.pulsar.client.impl.auth.AuthenticationToken` (or `token`): `token:<jwt>`,
  `file:///path/to/token`, or the bare token;
- `org.apache.pulsar.client.impl.auth.AuthenticationBasic` (or `basic`):
  `{"userId": "...", "password": "..."}`;
- `org.apache.pulsar.client.impl.auth.AuthenticationTls` (or `tls`):
  `tlsCertFile:/path/cert.pem,tlsKeyFile:/path/key.pem` or the same keys as JSON.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import pathlib
import ssl
import urllib.parse
import urllib.request
from typing import Any

from pulsar_common import errors, tls

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
BASIC_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"

#: Plugin names (Apache's class names and the C++ client's short names) -> method name.
METHODS = {
    TOKEN_PLUGIN: "token", "token": "token",
    BASIC_PLUGIN: "basic", "basic": "basic",
    TLS_PLUGIN: "tls", "tls": "tls",
    "org.apache.pulsar.client.impl.auth.AuthenticationDisabled": "none",
}


@dataclasses.dataclass(frozen=True)
class Credentials:
    """What a client presents: the auth method name and its data (CONNECT's
    auth_method_name/auth_data), or a client certificate for `tls`."""

    method: str
    data: bytes = b""
    tls_cert_file: str = ""
    tls_key_file: str = ""

    @property
    def http_authorization(self) -> str | None:
        """The Authorization header value over HTTP (None for TLS: the certificate speaks)."""
        if self.method == "token":
            return f"Bearer {self.data.decode()}"
        if self.method == "basic":
            return "Basic " + base64.b64encode(self.data).decode()
        return None


def _read_url_or_file(location: str) -> str:
    if location.startswith("file:"):
        path = urllib.request.url2pathname(urllib.parse.urlparse(location).path)
        try:
            return pathlib.Path(path).read_text().strip()
        except OSError as exc:
            raise errors.ConfigError(f"cannot read token file {path}: {exc}") from exc
    return location


def _key_values(params: str) -> dict[str, str]:
    """`{"k": "v"}` JSON, or Apache's `k1:v1,k2:v2` form."""
    text = params.strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise errors.ConfigError(f"authParams is not valid JSON: {exc}") from exc
        return {str(k): str(v) for k, v in parsed.items()}
    found = {}
    for part in text.split(","):
        key, sep, value = part.partition(":")
        if sep:
            found[key.strip()] = value.strip()
    return found


def credentials(plugin: str, params: str) -> Credentials | None:
    """The credentials an authPlugin/authParams pair describes; None without a plugin.
    Raises ConfigError for an unknown plugin or parameters that do not fit it."""
    if not plugin:
        return None
    method = METHODS.get(plugin.strip())
    if method is None:
        raise errors.ConfigError(f"unsupported authPlugin {plugin!r} (supported: "
                                 f"{TOKEN_PLUGIN}, {BASIC_PLUGIN}, {TLS_PLUGIN})")
    if method == "none":
        return None
    if method == "token":
        text = params.strip()
        token = _read_url_or_file(text.removeprefix("token:")) if text else ""
        if not token:
            raise errors.ConfigError("AuthenticationToken needs authParams token:<jwt> or "
                                     "file:///path")
        return Credentials("token", token.encode())
    values = _key_values(params)
    if method == "basic":
        user, password = values.get("userId"), values.get("password")
        if not user or password is None:
            raise errors.ConfigError('AuthenticationBasic needs authParams '
                                     '{"userId": "...", "password": "..."}')
        return Credentials("basic", f"{user}:{password}".encode())
    cert, key = values.get("tlsCertFile", ""), values.get("tlsKeyFile", "")
    if not cert or not key:
        raise errors.ConfigError("AuthenticationTls needs authParams "
                                 "tlsCertFile:<path>,tlsKeyFile:<path>")
    return Credentials("tls", tls_cert_file=cert, tls_key_file=key)


def official_client_arguments(found: Credentials | None, *, tls_trust_certs_file: str = "",
                              tls_allow_insecure: bool = False,
                              tls_hostname_verification: bool = False) -> dict[str, Any]:
    """Keyword arguments of the official `pulsar.Client` for these credentials and TLS options
    (imports the client wheel only when called)."""
    import pulsar

    arguments: dict[str, Any] = {
        "tls_allow_insecure_connection": tls_allow_insecure,
        "tls_validate_hostname": tls_hostname_verification,
    }
    if tls_trust_certs_file:
        arguments["tls_trust_certs_file_path"] = tls_trust_certs_file
    if found is None:
        return arguments
    if found.method == "token":
        arguments["authentication"] = pulsar.AuthenticationToken(found.data.decode())
    elif found.method == "basic":
        user, _, password = found.data.decode().partition(":")
        arguments["authentication"] = pulsar.AuthenticationBasic(user, password)
    else:
        arguments["authentication"] = pulsar.AuthenticationTLS(found.tls_cert_file,
                                                               found.tls_key_file)
    return arguments


@dataclasses.dataclass(frozen=True)
class ClientSecurity:
    """How a client of the brokers authenticates and checks their certificates: Apache's
    client.conf `authPlugin`, `authParams` and `tls*` keys, for the official client
    (binary protocol) and for HTTP calls alike."""

    auth_plugin: str = ""
    auth_params: str = ""
    tls_trust_certs_file: str = ""
    tls_allow_insecure: bool = False
    tls_hostname_verification: bool = False

    @property
    def credentials(self) -> Credentials | None:
        """Raises ConfigError for a plugin/params pair that cannot be used."""
        return credentials(self.auth_plugin, self.auth_params)

    def pulsar_client_arguments(self) -> dict[str, Any]:
        """Keyword arguments of the official pulsar.Client."""
        return official_client_arguments(
            self.credentials, tls_trust_certs_file=self.tls_trust_certs_file,
            tls_allow_insecure=self.tls_allow_insecure,
            tls_hostname_verification=self.tls_hostname_verification)

    def http_ssl_context(self) -> ssl.SSLContext:
        """The context for https:// URLs (trust file, client certificate for TLS auth)."""
        found = self.credentials
        return tls.client_context(tls.TlsSettings(
            trust_certs_file=self.tls_trust_certs_file,
            allow_insecure_connection=self.tls_allow_insecure,
            hostname_verification=self.tls_hostname_verification,
            cert_file=found.tls_cert_file if found else "",
            key_file=found.tls_key_file if found else ""))

    def http_headers(self) -> dict[str, str]:
        found = self.credentials
        header = None if found is None else found.http_authorization
        return {} if header is None else {"Authorization": header}
