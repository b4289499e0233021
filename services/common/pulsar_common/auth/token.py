"""The `token` method (Apache's AuthenticationProviderToken): a JWT whose claim names the role.

The validation key is either a secret (`tokenSecretKey`, HMAC) or a public key
(`tokenPublicKey`, RSA or EC). The accepted algorithms are pinned by the key's
type, never taken from the token: a token saying `alg: none`, or signed with
HMAC using the public key as its secret, is refused. Expiry (`exp`) and
not-before (`nbf`) are checked against the caller's clock, with
`tokenAllowedClockSkewSeconds` of leeway.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pulsar_common import errors as common_errors
from pulsar_common.auth import credentials, keys
from pulsar_common.auth.errors import AuthenticationError

METHOD = "token"
HMAC_ALGORITHMS = ("HS256", "HS384", "HS512")
RSA_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_ALGORITHMS = ("ES256", "ES384", "ES512")

ValidationKey = bytes | keys.PublicKey


def algorithms_for(key: ValidationKey) -> tuple[str, ...]:
    """The only algorithms a token checked with this key may use."""
    if isinstance(key, bytes):
        return HMAC_ALGORITHMS
    if isinstance(key, rsa.RSAPublicKey):
        return RSA_ALGORITHMS
    if isinstance(key, ec.EllipticCurvePublicKey):
        return EC_ALGORITHMS
    raise common_errors.ConfigError(f"unsupported validation key {type(key).__name__}")


@dataclasses.dataclass(frozen=True)
class TokenProvider:
    key: ValidationKey
    role_claim: str = "sub"
    audience_claim: str = ""
    audience: str = ""
    clock_skew_s: float = 0.0
    method: str = METHOD

    @classmethod
    def from_settings(cls, secret_key: str, public_key: str, public_alg: str, role_claim: str,
                      audience_claim: str, audience: str, clock_skew_s: float) -> TokenProvider:
        key: ValidationKey
        if secret_key:
            key = keys.read_key(secret_key)
        elif public_key:
            key = keys.public_key(keys.read_key(public_key))
            if public_alg and public_alg not in algorithms_for(key):
                raise common_errors.ConfigError(
                    f"tokenPublicAlg {public_alg} does not match the tokenPublicKey's type")
        else:
            raise common_errors.ConfigError("token authentication needs tokenSecretKey or "
                                            "tokenPublicKey")
        if audience_claim and not audience:
            raise common_errors.ConfigError(
                f"tokenAudienceClaim {audience_claim} is set but tokenAudience is not")
        return cls(key, role_claim or "sub", audience_claim, audience, clock_skew_s)

    def authenticate(self, given: credentials.Credentials,
                     now_s: float) -> credentials.Authenticated:
        token = given.data.decode("utf-8", "replace").strip()
        if not token:
            raise AuthenticationError("Blank token found")
        claims = self.verify(token, now_s)
        role = _role(claims.get(self.role_claim))
        if role is None:
            raise AuthenticationError(f"Token has no {self.role_claim!r} claim naming a role")
        exp = claims.get("exp")
        return credentials.Authenticated(role, self.method,
                                         float(exp) if isinstance(exp, int | float) else None)

    def verify(self, token: str, now_s: float) -> dict[str, Any]:
        """The token's claims when its signature, times and audience hold."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token, self.key, algorithms=list(algorithms_for(self.key)),
                options={"verify_exp": False, "verify_nbf": False, "verify_iat": False,
                         "verify_aud": False, "verify_iss": False})
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"Failed to authentication token: {exc}") from exc
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if exp is not None and (not isinstance(exp, int | float)
                                or now_s >= exp + self.clock_skew_s):
            raise AuthenticationError("Failed to authentication token: JWT expired")
        if nbf is not None and (not isinstance(nbf, int | float)
                                or now_s < nbf - self.clock_skew_s):
            raise AuthenticationError("Failed to authentication token: JWT not yet valid")
        if self.audience_claim:
            self._check_audience(claims.get(self.audience_claim))
        return claims

    def _check_audience(self, found: Any) -> None:
        if found is None:
            raise AuthenticationError(
                f"Found null Audience in token, for claimed field: {self.audience_claim}")
        audiences = [found] if isinstance(found, str) else found
        if not isinstance(audiences, list) or self.audience not in audiences:
            raise AuthenticationError(
                f"Audiences in token: {found} not contains this broker: {self.audience}")


def _role(value: Any) -> str | None:
    """The role claim: a string, or the first string of a list (as Apache reads it)."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and value and isinstance(value[0], str) and value[0]:
        return value[0]
    return None


def create(signing_key: bytes | keys.PrivateKey, subject: str, *,
           expires_at_s: float | None = None, algorithm: str | None = None,
           headers: dict[str, Any] | None = None) -> str:
    """A signed token for subject (what `pulsar tokens create` prints)."""
    if algorithm is None:
        algorithm = default_algorithm(signing_key)
    claims: dict[str, Any] = {"sub": subject}
    if expires_at_s is not None:
        claims["exp"] = int(expires_at_s)
    return jwt.encode(claims, signing_key, algorithm=algorithm, headers=headers)


def default_algorithm(signing_key: bytes | keys.PrivateKey) -> str:
    if isinstance(signing_key, bytes):
        return "HS256"
    if isinstance(signing_key, rsa.RSAPrivateKey):
        return "RS256"
    return {256: "ES256", 384: "ES384", 521: "ES512"}.get(signing_key.curve.key_size, "ES256")
