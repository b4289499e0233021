"""The `tls` method (Apache's AuthenticationProviderTls): the common name of the client
certificate, verified by the TLS listener, is the role."""

from __future__ import annotations

import dataclasses

from pulsar_common.auth import credentials
from pulsar_common.auth.errors import AuthenticationError

METHOD = "tls"


def common_name(certificate: credentials.PeerCertificate) -> str | None:
    """The subject's CN of a certificate in `getpeercert()` form."""
    for rdn in certificate.get("subject", ()):
        for name, value in rdn:
            if name == "commonName" and value:
                return str(value)
    return None


@dataclasses.dataclass(frozen=True)
class TlsProvider:
    method: str = METHOD

    def authenticate(self, given: credentials.Credentials,
                     now_s: float) -> credentials.Authenticated:
        if not given.peer_certificate:
            raise AuthenticationError("No verified TLS client certificate on this connection")
        role = common_name(given.peer_certificate)
        if role is None:
            raise AuthenticationError("The client certificate has no common name (CN)")
        return credentials.Authenticated(role, self.method)
