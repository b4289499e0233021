"""Authentication, TLS trust and Apache's `client.conf` for `pulsar-admin`, `pulsar-client`
and `pulsar-perf`.

client.conf is the file named by PULSAR_CLIENT_CONF, else $PULSAR_HOME/conf/client.conf,
else ./conf/client.conf when it exists. Its keys webServiceUrl, brokerServiceUrl,
authPlugin, authParams, tlsTrustCertsFilePath, tlsAllowInsecureConnection and
tlsEnableHostnameVerification are the defaults; command-line flags win.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
from collections.abc import Mapping

from pulsar_common import client_auth, config

#: Environment variable naming the client.conf to read (as Apache's scripts).
CLIENT_CONF_ENV = "PULSAR_CLIENT_CONF"


@dataclasses.dataclass(frozen=True)
class ClientOptions(client_auth.ClientSecurity):
    """What a tool connects with, after client.conf and flags are combined."""

    web_service_url: str = ""
    broker_service_url: str = ""


def client_conf_path(environ: Mapping[str, str] | None = None) -> pathlib.Path | None:
    env = os.environ if environ is None else environ
    if env.get(CLIENT_CONF_ENV):
        return pathlib.Path(env[CLIENT_CONF_ENV])
    for base in (env.get("PULSAR_HOME"), "."):
        if base:
            candidate = pathlib.Path(base) / "conf" / "client.conf"
            if candidate.is_file():
                return candidate
    return None


def read_client_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """client.conf's keys ({} when there is none); a named file that is missing is an error."""
    path = client_conf_path(environ)
    if path is None:
        return {}
    try:
        return config.read_properties(path.read_text())
    except OSError as exc:
        raise SystemExit(f"cannot read client configuration {path}: {exc}") from exc


def add_arguments(parser: argparse.ArgumentParser, trust_flags: tuple[str, ...]) -> None:
    """Apache's flags; trust_flags are the spellings this tool uses for the trust file
    (pulsar-admin and pulsar-client: --tls-trust-cert-path; pulsar-perf: --trust-cert-file)."""
    parser.add_argument("--auth-plugin", dest="auth_plugin", default=None,
                        help="authentication plugin class, e.g. "
                             "org.apache.pulsar.client.impl.auth.AuthenticationToken "
                             "(default: client.conf authPlugin)")
    parser.add_argument("--auth-params", dest="auth_params", default=None,
                        help="authentication parameters, e.g. token:<jwt> or file:///path "
                             "(default: client.conf authParams)")
    parser.add_argument(*trust_flags, dest="tls_trust_cert_path", default=None,
                        help="PEM file of the CAs the server certificate is checked against "
                             "(default: client.conf tlsTrustCertsFilePath)")
    parser.add_argument("--tls-allow-insecure", dest="tls_allow_insecure", action="store_true",
                        default=None, help="accept a server certificate that does not verify")
    parser.add_argument("--tls-enable-hostname-verification", dest="tls_hostname_verification",
                        action="store_true", default=None,
                        help="check that the server certificate names the host connected to")


def _flag(value: bool | None, conf: dict[str, str], key: str) -> bool:
    if value is not None:
        return value
    return conf.get(key, "false").strip().lower() == "true"


def resolve(args: argparse.Namespace, conf: dict[str, str] | None = None) -> ClientOptions:
    """Flags over client.conf (read now when conf is None)."""
    conf = read_client_conf() if conf is None else conf
    return ClientOptions(
        web_service_url=conf.get("webServiceUrl", ""),
        broker_service_url=conf.get("brokerServiceUrl", ""),
        auth_plugin=args.auth_plugin if args.auth_plugin is not None
        else conf.get("authPlugin", ""),
        auth_params=args.auth_params if args.auth_params is not None
        else conf.get("authParams", ""),
        tls_trust_certs_file=args.tls_trust_cert_path if args.tls_trust_cert_path is not None
        else conf.get("tlsTrustCertsFilePath", ""),
        tls_allow_insecure=_flag(args.tls_allow_insecure, conf, "tlsAllowInsecureConnection"),
        tls_hostname_verification=_flag(args.tls_hostname_verification, conf,
                                        "tlsEnableHostnameVerification"))
