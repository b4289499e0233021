"""The token method: signatures, pinned algorithms, expiry, role and audience claims."""

from __future__ import annotations

import base64
import hmac
import json

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from pulsar_common import errors
from pulsar_common.auth import credentials, keys, token
from pulsar_common.auth.errors import AuthenticationError

SECRET = b"s" * 32
NOW = 1_700_000_000.0


def creds(text: str) -> credentials.Credentials:
    return credentials.Credentials("token", text.encode())


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def test_hs256_token_gives_its_subject_as_role() -> None:
    provider = token.TokenProvider(SECRET)
    found = provider.authenticate(creds(token.create(SECRET, "alice")), NOW)
    assert (found.role, found.method, found.expires_at_s) == ("alice", "token", None)


def test_expired_token_is_refused_and_a_live_one_reports_its_expiry() -> None:
    provider = token.TokenProvider(SECRET)
    text = token.create(SECRET, "alice", expires_at_s=NOW + 10)
    assert provider.authenticate(creds(text), NOW).expires_at_s == NOW + 10
    with pytest.raises(AuthenticationError, match="expired"):
        provider.authenticate(creds(text), NOW + 10)
    assert token.TokenProvider(SECRET, clock_skew_s=5).authenticate(creds(text), NOW + 12)


def test_wrong_signature_is_refused() -> None:
    other = token.create(b"o" * 32, "alice")
    with pytest.raises(AuthenticationError, match="Signature"):
        token.TokenProvider(SECRET).authenticate(creds(other), NOW)


def test_alg_none_is_refused() -> None:
    unsigned = (b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode()) + "."
                + b64url(json.dumps({"sub": "admin"}).encode()) + ".")
    for key in (SECRET,):
        with pytest.raises(AuthenticationError):
            token.TokenProvider(key).authenticate(creds(unsigned), NOW)


def test_public_key_used_as_hmac_secret_is_refused(rsa_key: rsa.RSAPrivateKey) -> None:
    public = rsa_key.public_key()
    pem = public.public_bytes(serialization.Encoding.PEM,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "admin"}).encode())
    for secret in (pem, public.public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)):
        signature = hmac.new(secret, f"{header}.{payload}".encode(), "sha256").digest()
        forged = f"{header}.{payload}.{b64url(signature)}"
        with pytest.raises(AuthenticationError, match="alg"):
            token.TokenProvider(public).authenticate(creds(forged), NOW)


def test_rs256_and_es256_tokens_verify_with_their_public_keys(rsa_key: rsa.RSAPrivateKey) -> None:
    found = token.TokenProvider(rsa_key.public_key()).authenticate(
        creds(token.create(rsa_key, "bob")), NOW)
    assert found.role == "bob"
    ec_key = ec.generate_private_key(ec.SECP256R1())
    found = token.TokenProvider(ec_key.public_key()).authenticate(
        creds(token.create(ec_key, "carol")), NOW)
    assert found.role == "carol"
    with pytest.raises(AuthenticationError):  # an RSA token against the EC key
        token.TokenProvider(ec_key.public_key()).authenticate(
            creds(token.create(rsa_key, "bob")), NOW)


def test_role_claim_and_audience() -> None:
    text = jwt.encode({"sub": "x", "role": ["ops", "dev"], "aud": ["a", "b"]}, SECRET)
    provider = token.TokenProvider(SECRET, role_claim="role", audience_claim="aud", audience="b")
    assert provider.authenticate(creds(text), NOW).role == "ops"
    with pytest.raises(AuthenticationError, match="Audiences"):
        token.TokenProvider(SECRET, audience_claim="aud", audience="c").authenticate(
            creds(text), NOW)
    with pytest.raises(AuthenticationError, match="claim"):
        token.TokenProvider(SECRET, role_claim="missing").authenticate(creds(text), NOW)


def test_blank_and_garbage_tokens_are_refused() -> None:
    provider = token.TokenProvider(SECRET)
    for text in ("", "   ", "not-a-jwt", "a.b.c"):
        with pytest.raises(AuthenticationError):
            provider.authenticate(creds(text), NOW)


def test_keys_are_read_from_data_file_and_base64(tmp_path: object,
                                                 rsa_key: rsa.RSAPrivateKey) -> None:
    import pathlib
    assert isinstance(tmp_path, pathlib.Path)
    path = tmp_path / "secret.key"
    path.write_bytes(SECRET)
    encoded = base64.b64encode(SECRET).decode()
    for reference in (f"file://{path}", str(path), f"data:;base64,{encoded}", encoded):
        assert keys.read_key(reference) == SECRET
    with pytest.raises(errors.ConfigError):
        keys.read_key("file:///no/such/key")
    der = rsa_key.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    assert keys.public_key(der).public_numbers() == keys.public_key(pem).public_numbers()


def test_provider_settings_are_checked(rsa_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(errors.ConfigError):
        token.TokenProvider.from_settings("", "", "RS256", "", "", "", 0)
    der = rsa_key.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    reference = "data:;base64," + base64.b64encode(der).decode()
    with pytest.raises(errors.ConfigError, match="tokenPublicAlg"):
        token.TokenProvider.from_settings("", reference, "ES256", "", "", "", 0)
    with pytest.raises(errors.ConfigError, match="tokenAudience"):
        token.TokenProvider.from_settings("", reference, "RS256", "", "aud", "", 0)
    assert token.TokenProvider.from_settings("", reference, "RS256", "", "", "", 0).key
