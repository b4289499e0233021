"""How the worker and its instances connect to brokers on a secured cluster.

Apache's functions worker authenticates to brokers with its
`brokerClientAuthenticationPlugin` / `brokerClientAuthenticationParameters`
and trusts their certificates by `tlsTrustCertsFilePath`,
`tlsAllowInsecureConnection` and `tlsEnableHostnameVerification`; the
instances it starts use the same credentials. The instances get them as a
client.conf-style file (Apache's client.conf keys) that only the worker's
user can read, so no credential appears on a process command line.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Mapping

from pulsar_common import client_auth, config

#: Apache's client.conf keys of the file an instance reads.
AUTH_PLUGIN_KEY = "authPlugin"
AUTH_PARAMS_KEY = "authParams"
TRUST_KEY = "tlsTrustCertsFilePath"
INSECURE_KEY = "tlsAllowInsecureConnection"
HOSTNAME_KEY = "tlsEnableHostnameVerification"


@dataclasses.dataclass(frozen=True)
class BrokerClientSettings(client_auth.ClientSecurity):
    """A worker's or an instance's settings for reaching brokers, kept as a client.conf."""

    def to_properties(self) -> str:
        return "".join(f"{key}={value}\n" for key, value in (
            (AUTH_PLUGIN_KEY, self.auth_plugin), (AUTH_PARAMS_KEY, self.auth_params),
            (TRUST_KEY, self.tls_trust_certs_file),
            (INSECURE_KEY, str(self.tls_allow_insecure).lower()),
            (HOSTNAME_KEY, str(self.tls_hostname_verification).lower())))

    @classmethod
    def from_properties(cls, values: Mapping[str, str]) -> BrokerClientSettings:
        def flag(key: str) -> bool:
            return values.get(key, "false").strip().lower() == "true"

        return cls(values.get(AUTH_PLUGIN_KEY, ""), values.get(AUTH_PARAMS_KEY, ""),
                   values.get(TRUST_KEY, ""), flag(INSECURE_KEY), flag(HOSTNAME_KEY))

    @classmethod
    def read(cls, path: pathlib.Path) -> BrokerClientSettings:
        return cls.from_properties(config.read_properties(path.read_text()))

    def write_private(self, path: pathlib.Path) -> None:
        """Write as client.conf, readable and writable by this user only (also when the file
        existed with wider permissions)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(descriptor, 0o600)
            os.write(descriptor, self.to_properties().encode())
        finally:
            os.close(descriptor)


#: No credentials and the default TLS trust: a broker without authentication.
ANONYMOUS = BrokerClientSettings()


#: Keys of function-mesh's spec.pulsar.authSecret and spec.pulsar.tlsSecret: on Kubernetes each
#: is a file of the Secret mounted into the instance's pod.
MESH_AUTH_PLUGIN_KEY = "clientAuthenticationPlugin"
MESH_AUTH_PARAMS_KEY = "clientAuthenticationParameters"
MESH_TLS_INSECURE_KEY = "tlsAllowInsecureConnection"
MESH_TLS_HOSTNAME_KEY = "tlsHostnameVerificationEnable"
MESH_TLS_TRUST_KEY = "tlsTrustCertsFilePath"


def _secret_files(directory: pathlib.Path) -> dict[str, str]:
    """Each file of a mounted Secret (key -> its text, surrounding whitespace removed)."""
    return {path.name: path.read_text().strip() for path in directory.iterdir()
            if path.is_file() and not path.name.startswith(".")}


def with_mesh_secrets(base: BrokerClientSettings, auth_dir: pathlib.Path | None,
                      tls_dir: pathlib.Path | None) -> BrokerClientSettings:
    """base with what function-mesh's authSecret and tlsSecret directories set. Hostname
    verification defaults to on with a tlsSecret, as in function-mesh. Raises OSError when a
    directory cannot be read."""
    result = base
    if auth_dir is not None:
        files = _secret_files(auth_dir)
        result = dataclasses.replace(result, auth_plugin=files.get(MESH_AUTH_PLUGIN_KEY, ""),
                                     auth_params=files.get(MESH_AUTH_PARAMS_KEY, ""))
    if tls_dir is not None:
        files = _secret_files(tls_dir)
        result = dataclasses.replace(
            result,
            tls_trust_certs_file=files.get(MESH_TLS_TRUST_KEY, result.tls_trust_certs_file),
            tls_allow_insecure=files.get(MESH_TLS_INSECURE_KEY, "false").lower() == "true",
            tls_hostname_verification=files.get(MESH_TLS_HOSTNAME_KEY, "true").lower() == "true")
    return result
