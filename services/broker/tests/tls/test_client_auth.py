"""Apache's authPlugin / authParams forms, as the CLIs and the proxy read them."""

from __future__ import annotations

import base64
import pathlib

import pytest
from pulsar_common import client_auth, errors


def test_a_token_is_given_inline_or_read_from_a_file_url(tmp_path: pathlib.Path) -> None:
    token_file = tmp_path / "token.jwt"
    token_file.write_text("eyJ.file.token\n")
    inline = client_auth.credentials(client_auth.TOKEN_PLUGIN, "token:eyJ.inline")
    from_file = client_auth.credentials("token", f"file://{token_file}")
    assert inline == client_auth.Credentials("token", b"eyJ.inline")
    assert from_file is not None and from_file.data == b"eyJ.file.token"
    assert from_file.http_authorization == "Bearer eyJ.file.token"


def test_basic_takes_apaches_json_and_becomes_a_basic_header() -> None:
    found = client_auth.credentials(client_auth.BASIC_PLUGIN,
                                    '{"userId": "superuser", "password": "s3cret:x"}')
    assert found is not None and found.method == "basic"
    assert found.http_authorization == "Basic " + base64.b64encode(b"superuser:s3cret:x").decode()


def test_tls_names_the_certificate_and_key_files() -> None:
    found = client_auth.credentials(client_auth.TLS_PLUGIN,
                                    "tlsCertFile:/c/admin.pem,tlsKeyFile:/c/admin.key")
    assert found == client_auth.Credentials("tls", tls_cert_file="/c/admin.pem",
                                            tls_key_file="/c/admin.key")
    assert found.http_authorization is None


@pytest.mark.parametrize("plugin, params", [
    (client_auth.TOKEN_PLUGIN, ""),
    (client_auth.BASIC_PLUGIN, '{"userId": "x"}'),
    (client_auth.TLS_PLUGIN, "tlsCertFile:/only/cert"),
    ("org.example.Custom", "x"),
    (client_auth.TOKEN_PLUGIN, "file:///does/not/exist"),
])
def test_parameters_that_do_not_fit_the_plugin_are_refused(plugin: str, params: str) -> None:
    with pytest.raises(errors.ConfigError):
        client_auth.credentials(plugin, params)


def test_no_plugin_means_no_credentials() -> None:
    assert client_auth.credentials("", "token:ignored") is None
