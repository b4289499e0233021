"""The authentication service: the providers `authenticationProviders` names, and the rules
for connections that bring no credentials (`anonymousUserRole`).

As in Apache, a method no provider serves is treated like no credentials at
all: the anonymous role when one is set, a refusal otherwise.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Protocol

from pulsar_common import errors as common_errors
from pulsar_common.auth import basic, credentials, tls, token
from pulsar_common.auth.errors import AuthenticationError

_PACKAGE = "org.apache.pulsar.broker.authentication."
#: Apache's provider class names (authenticationProviders) -> method names.
PROVIDER_CLASSES = {
    _PACKAGE + "AuthenticationProviderToken": token.METHOD,
    _PACKAGE + "AuthenticationProviderBasic": basic.METHOD,
    _PACKAGE + "AuthenticationProviderTls": tls.METHOD,
}


class Provider(Protocol):
    @property
    def method(self) -> str: ...

    def authenticate(self, given: credentials.Credentials,
                     now_s: float) -> credentials.Authenticated: ...


@dataclasses.dataclass(frozen=True)
class AuthenticationSettings:
    """Apache's authentication settings, by meaning (each service maps its own keys)."""

    providers: tuple[str, ...] = ()
    anonymous_user_role: str = ""
    token_secret_key: str = ""
    token_public_key: str = ""
    token_public_alg: str = "RS256"
    token_auth_claim: str = ""
    token_audience_claim: str = ""
    token_audience: str = ""
    token_allowed_clock_skew_seconds: int = 0
    basic_auth_conf: str = ""


def method_of(provider_name: str) -> str:
    """The method a provider class name (or a method name) stands for."""
    name = provider_name.strip()
    if name in PROVIDER_CLASSES:
        return PROVIDER_CLASSES[name]
    if name in PROVIDER_CLASSES.values():
        return name
    raise common_errors.ConfigError(
        f"unknown authentication provider {name!r}: expected one of "
        f"{', '.join(PROVIDER_CLASSES)}")


def _provider(method: str, settings: AuthenticationSettings) -> Provider:
    if method == token.METHOD:
        return token.TokenProvider.from_settings(
            settings.token_secret_key, settings.token_public_key, settings.token_public_alg,
            settings.token_auth_claim, settings.token_audience_claim, settings.token_audience,
            settings.token_allowed_clock_skew_seconds)
    if method == basic.METHOD:
        return basic.BasicProvider.from_settings(settings.basic_auth_conf)
    return tls.TlsProvider()


class AuthenticationService:
    def __init__(self, providers: dict[str, Provider], anonymous_user_role: str = "") -> None:
        self.providers = providers
        self.anonymous_user_role = anonymous_user_role

    @classmethod
    def from_settings(cls, settings: AuthenticationSettings) -> AuthenticationService:
        providers: dict[str, Provider] = {}
        for name in settings.providers:
            method = method_of(name)
            providers[method] = _provider(method, settings)
        return cls(providers, settings.anonymous_user_role)

    def authenticate(self, given: credentials.Credentials,
                     now_s: float) -> credentials.Authenticated:
        """The role the credentials prove, or AuthenticationError saying why not."""
        provider = self.providers.get(given.method)
        if provider is None:
            if self.anonymous_user_role:
                return credentials.Authenticated(self.anonymous_user_role, "none")
            if given.method and given.method != "none":
                raise AuthenticationError(
                    f"No authentication provider for method {given.method!r}, and no "
                    "anonymous role")
            raise AuthenticationError("Authentication required")
        return provider.authenticate(given, now_s)

    def http_credentials(self, authorization: str | None,
                         peer_certificate: credentials.PeerCertificate | None
                         ) -> credentials.Credentials:
        """The credentials of an HTTP request: `Authorization: Bearer <token>` or
        `Basic <base64 user:password>`, else the client certificate when TLS serves it."""
        if authorization:
            scheme, _, value = authorization.strip().partition(" ")
            value = value.strip()
            if scheme.lower() == "bearer":
                return credentials.Credentials(token.METHOD, value.encode())
            if scheme.lower() == "basic":
                try:
                    decoded = base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise AuthenticationError("Base64 decoding is failure") from exc
                return credentials.Credentials(basic.METHOD, decoded)
            raise AuthenticationError(f"Unsupported HTTP Authorization scheme {scheme!r}")
        if peer_certificate and tls.METHOD in self.providers:
            return credentials.Credentials(tls.METHOD, b"", peer_certificate)
        return credentials.Credentials()
