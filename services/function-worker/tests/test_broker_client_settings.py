"""The worker's broker client settings: the owner-only client.conf its instances read, and what
the official client and HTTP calls get from Apache's plugin/params pair; an instance's settings
from function-mesh's mounted authSecret/tlsSecret files."""

from __future__ import annotations

import argparse
import os
import pathlib
import stat

import pulsar
import pytest
from pulsar_common import errors as common_errors
from pulsar_functions import broker_client
from pulsar_functions.instance import cli
from pulsar_functions.worker import config, rest_security

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
BASIC_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationBasic"
TLS_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationTls"


def test_client_conf_round_trips_and_is_readable_by_the_owner_only(
        tmp_path: pathlib.Path) -> None:
    settings = broker_client.BrokerClientSettings(
        TOKEN_PLUGIN, "token:abc.def.ghi", "/certs/ca.pem", tls_allow_insecure=False,
        tls_hostname_verification=True)
    path = tmp_path / "client.conf"
    path.write_text("left over")
    os.chmod(path, 0o644)
    settings.write_private(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert broker_client.BrokerClientSettings.read(path) == settings


@pytest.mark.parametrize("plugin, params, header", [
    (TOKEN_PLUGIN, "token:abc", "Bearer abc"),
    ("token", "abc", "Bearer abc"),
    (BASIC_PLUGIN, '{"userId": "u", "password": "p"}', "Basic dTpw"),
    (TLS_PLUGIN, "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", None),
    ("", "", None),
])
def test_http_calls_carry_the_credentials_as_an_authorization_header(
        plugin: str, params: str, header: str | None) -> None:
    settings = broker_client.BrokerClientSettings(plugin, params)
    assert settings.http_headers() == ({} if header is None else {"Authorization": header})


@pytest.mark.parametrize("plugin, params, kind", [
    (TOKEN_PLUGIN, "token:abc", pulsar.AuthenticationToken),
    (BASIC_PLUGIN, '{"userId": "u", "password": "p"}', pulsar.AuthenticationBasic),
    (TLS_PLUGIN, "tlsCertFile:/c.pem,tlsKeyFile:/k.pem", pulsar.AuthenticationTLS),
])
def test_the_official_client_gets_the_matching_authentication(
        plugin: str, params: str, kind: type) -> None:
    arguments = broker_client.BrokerClientSettings(plugin, params, "/ca.pem").pulsar_client_arguments()
    assert isinstance(arguments["authentication"], kind)
    assert arguments["tls_trust_certs_file_path"] == "/ca.pem"


def test_no_plugin_means_no_authentication() -> None:
    assert "authentication" not in broker_client.ANONYMOUS.pulsar_client_arguments()


@pytest.mark.parametrize("plugin, params", [
    ("org.example.Unknown", "x"), (TOKEN_PLUGIN, ""), (BASIC_PLUGIN, '{"userId": "u"}'),
])
def test_an_unusable_plugin_or_params_is_a_config_error(plugin: str, params: str) -> None:
    with pytest.raises(common_errors.ConfigError):
        _ = broker_client.BrokerClientSettings(plugin, params).credentials


def test_worker_config_maps_apaches_keys() -> None:
    conf = config.WorkerConfig(broker_client_authentication_plugin=TOKEN_PLUGIN,
                               broker_client_authentication_parameters="token:t",
                               tls_trust_certs_file_path="/ca.pem")
    assert conf.broker_client_settings == broker_client.BrokerClientSettings(
        TOKEN_PLUGIN, "token:t", "/ca.pem")


@pytest.mark.parametrize("path, namespace", [
    ("/admin/v3/functions/t/ns/f", "t/ns"),
    ("/admin/v3/functions/t/ns", "t/ns"),
    ("/admin/v3/functions/t/ns/f/0/status", "t/ns"),
    ("/admin/v3/functions/t", None),
    ("/admin/v2/worker/cluster", None),
])
def test_functions_calls_are_judged_on_their_namespace(path: str,
                                                        namespace: str | None) -> None:
    found = rest_security.namespace_of(path)
    assert (None if found is None else str(found)) == namespace


def test_the_instance_reads_the_mounted_secrets_as_its_broker_client_settings(tmp_path: pathlib.Path) -> None:
    """What the flags the operator renders for spec.pulsar.authSecret / tlsSecret / tlsConfig
    make `pulsar function-instance` connect with."""
    auth, tls = tmp_path / "client-auth", tmp_path / "client-tls"
    auth.mkdir()
    tls.mkdir()
    (auth / "clientAuthenticationPlugin").write_text("org.apache.pulsar.client.impl.auth.AuthenticationToken\n")
    (auth / "clientAuthenticationParameters").write_text("token:abc.def.ghi")
    (tls / "tlsTrustCertsFilePath").write_text("/etc/ca.pem")
    (tls / "tlsAllowInsecureConnection").write_text("false")
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--config", "f.json", "--client-auth-dir", str(auth), "--client-tls-dir", str(tls)])
    settings = cli.broker_client_settings(args)
    assert (settings.auth_plugin, settings.auth_params) == (
        "org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc.def.ghi")
    assert settings.http_headers() == {"Authorization": "Bearer abc.def.ghi"}
    assert (settings.tls_trust_certs_file, settings.tls_allow_insecure, settings.tls_hostname_verification) == (
        "/etc/ca.pem", False, True)  # function-mesh verifies host names unless the Secret says false
    args = parser.parse_args(["--config", "f.json", "--client-tls-dir", str(tls), "--tls-trust-certs-file",
                              "/mnt/ca/ca.crt", "--tls-hostname-verification", "false"])
    settings = cli.broker_client_settings(args)
    assert (settings.tls_trust_certs_file, settings.tls_hostname_verification) == ("/mnt/ca/ca.crt", False)
