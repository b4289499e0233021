"""The basic method: htpasswd hashes Apache accepts (apr1, crypt) and bcrypt; never plain text."""

from __future__ import annotations

import base64

import bcrypt
import pytest
from passlib import hash as passlib_hash
from pulsar_common import errors
from pulsar_common.auth import basic, credentials
from pulsar_common.auth.errors import AuthenticationError


def creds(text: str) -> credentials.Credentials:
    return credentials.Credentials("basic", text.encode())


@pytest.fixture(scope="module")
def provider() -> basic.BasicProvider:
    lines = [
        "# users",
        f"md5user:{passlib_hash.apr_md5_crypt.hash('md5pass')}",
        f"cryptuser:{passlib_hash.des_crypt.hash('cryptpw')}",
        "bcryptuser:" + bcrypt.hashpw(b"bcpass", bcrypt.gensalt(4)).decode().replace(
            "$2b$", "$2y$"),
        "plainuser:plainpass",
        "",
    ]
    conf = "data:;base64," + base64.b64encode("\n".join(lines).encode()).decode()
    return basic.BasicProvider.from_settings(conf)


@pytest.mark.parametrize("user,password", [("md5user", "md5pass"), ("cryptuser", "cryptpw"),
                                           ("bcryptuser", "bcpass")])
def test_each_supported_hash_authenticates_its_user(provider: basic.BasicProvider, user: str,
                                                    password: str) -> None:
    assert provider.authenticate(creds(f"{user}:{password}"), 0).role == user


@pytest.mark.parametrize("text", ["md5user:wrong", "nobody:md5pass", "plainuser:plainpass",
                                  "md5user", ":md5pass", ""])
def test_wrong_unknown_plain_and_malformed_credentials_are_refused(
        provider: basic.BasicProvider, text: str) -> None:
    with pytest.raises(AuthenticationError):
        provider.authenticate(creds(text), 0)


def test_malformed_password_file_stops_start_up(tmp_path: object) -> None:
    import pathlib
    assert isinstance(tmp_path, pathlib.Path)
    path = tmp_path / "users"
    path.write_text("no-colon-here\n")
    with pytest.raises(errors.ConfigError, match="line 1"):
        basic.BasicProvider.from_settings(str(path))
    with pytest.raises(errors.ConfigError):
        basic.BasicProvider.from_settings("")
