"""The authentication service: providers by Apache class name, anonymous role, HTTP headers,
TLS certificates."""

from __future__ import annotations

import base64

import pytest
from pulsar_common import errors
from pulsar_common.auth import credentials, service, tls, token
from pulsar_common.auth.errors import AuthenticationError

SECRET = b"k" * 32
SECRET_REF = "data:;base64," + base64.b64encode(SECRET).decode()
CERT = {"subject": ((("countryName", "US"),), (("commonName", "client-role"),))}


def make(**overrides: object) -> service.AuthenticationService:
    settings = service.AuthenticationSettings(
        providers=("org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
                   "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"),
        token_secret_key=SECRET_REF)
    for key, value in overrides.items():
        settings = service.AuthenticationSettings(**{**settings.__dict__, key: value})
    return service.AuthenticationService.from_settings(settings)


def test_providers_by_apache_class_name_and_method_name() -> None:
    assert set(make().providers) == {"token", "tls"}
    assert set(make(providers=("token",)).providers) == {"token"}
    with pytest.raises(errors.ConfigError, match="unknown authentication provider"):
        make(providers=("com.example.Custom",))


def test_no_credentials_or_unknown_method_needs_the_anonymous_role() -> None:
    with pytest.raises(AuthenticationError, match="required"):
        make().authenticate(credentials.Credentials(), 0)
    with pytest.raises(AuthenticationError, match="No authentication provider"):
        make().authenticate(credentials.Credentials("basic", b"u:p"), 0)
    anonymous = make(anonymous_user_role="guest")
    assert anonymous.authenticate(credentials.Credentials(), 0).role == "guest"
    # A bad token is still refused: the anonymous role is for connections without a provider.
    with pytest.raises(AuthenticationError):
        anonymous.authenticate(credentials.Credentials("token", b"bad"), 0)


def test_http_bearer_basic_and_certificate_credentials() -> None:
    auth = make()
    bearer = auth.http_credentials(f"Bearer {token.create(SECRET, 'alice')}", None)
    assert auth.authenticate(bearer, 0).role == "alice"
    basic = auth.http_credentials("Basic " + base64.b64encode(b"u:p").decode(), None)
    assert (basic.method, basic.data) == ("basic", b"u:p")
    with pytest.raises(AuthenticationError):
        auth.http_credentials("Basic ***", None)
    with pytest.raises(AuthenticationError):
        auth.http_credentials("Digest x", None)
    cert = auth.http_credentials(None, CERT)
    assert auth.authenticate(cert, 0).role == "client-role"
    assert auth.http_credentials(None, None) == credentials.Credentials()


def test_tls_role_is_the_certificate_common_name() -> None:
    provider = tls.TlsProvider()
    assert provider.authenticate(credentials.Credentials("tls", b"", CERT), 0).role == "client-role"
    with pytest.raises(AuthenticationError, match="certificate"):
        provider.authenticate(credentials.Credentials("tls"), 0)
    with pytest.raises(AuthenticationError, match="common name"):
        provider.authenticate(credentials.Credentials("tls", b"", {"subject": ()}), 0)
