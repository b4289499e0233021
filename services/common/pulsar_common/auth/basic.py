"""The `basic` method (Apache's AuthenticationProviderBasic): users and password hashes in an
htpasswd-style file (`basicAuthConf`: a path, `file:`, `data:` or base64).

Each line is `user:hash`. Apache accepts apr1 MD5 (`htpasswd -m`) and
traditional crypt; bcrypt (`htpasswd -B`) and the SHA-crypt forms are accepted
too. Plain-text passwords are never accepted. The credentials are `user:password`
(CONNECT auth_data, or the decoded HTTP `Authorization: Basic`).
"""

from __future__ import annotations

import dataclasses

import bcrypt
from passlib import hash as passlib_hash

from pulsar_common import errors as common_errors
from pulsar_common.auth import credentials, keys
from pulsar_common.auth.errors import AuthenticationError

METHOD = "basic"
_UNKNOWN = "Unknown user or invalid password"


def verify_password(password: str, hashed: str) -> bool:
    """Whether password matches an htpasswd hash of one of the supported forms."""
    try:
        if hashed.startswith(("$2a$", "$2b$", "$2y$")):
            return bcrypt.checkpw(password.encode(), hashed.replace("$2y$", "$2b$", 1).encode())
        if hashed.startswith("$apr1$"):
            return bool(passlib_hash.apr_md5_crypt.verify(password, hashed))
        if hashed.startswith("$1$"):
            return bool(passlib_hash.md5_crypt.verify(password, hashed))
        if hashed.startswith("$5$"):
            return bool(passlib_hash.sha256_crypt.verify(password, hashed))
        if hashed.startswith("$6$"):
            return bool(passlib_hash.sha512_crypt.verify(password, hashed))
        if len(hashed) == 13:
            return bool(passlib_hash.des_crypt.verify(password, hashed))
    except ValueError:
        return False
    return False


def parse_users(text: str) -> dict[str, str]:
    """user -> hash from htpasswd lines (blank lines and # comments skipped)."""
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, hashed = line.partition(":")
        if not sep or not user or not hashed or ":" in hashed:
            raise common_errors.ConfigError(
                f"basicAuthConf line {number}: the format of the password file is invalid")
        users[user] = hashed
    return users


@dataclasses.dataclass(frozen=True)
class BasicProvider:
    users: dict[str, str]
    method: str = METHOD

    @classmethod
    def from_settings(cls, basic_auth_conf: str) -> BasicProvider:
        if not basic_auth_conf:
            raise common_errors.ConfigError("basic authentication needs basicAuthConf")
        return cls(parse_users(keys.read_key(basic_auth_conf).decode("utf-8")))

    def authenticate(self, given: credentials.Credentials,
                     now_s: float) -> credentials.Authenticated:
        user, sep, password = given.data.decode("utf-8", "replace").partition(":")
        if not sep or not user:
            raise AuthenticationError("Basic credentials must be user:password")
        hashed = self.users.get(user)
        if hashed is None or not verify_password(password, hashed):
            raise AuthenticationError(_UNKNOWN)
        return credentials.Authenticated(user, self.method)
