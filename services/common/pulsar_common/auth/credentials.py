"""What a front door hands to authentication, and what it gets back."""

from __future__ import annotations

import dataclasses
from typing import Any

#: A peer certificate as `ssl.SSLObject.getpeercert()` returns it (only verified ones).
PeerCertificate = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Credentials:
    """method: the CONNECT's auth_method_name ("token", "basic", "tls"; empty when none);
    data: its auth_data (for HTTP, the bearer token or the decoded `user:password`);
    peer_certificate: the verified client certificate of a TLS connection, if any."""

    method: str = ""
    data: bytes = b""
    peer_certificate: PeerCertificate | None = None


@dataclasses.dataclass(frozen=True)
class Authenticated:
    """The role proven, by which method, and until when (seconds since the epoch; None:
    the credentials do not expire)."""

    role: str
    method: str
    expires_at_s: float | None = None

    def expired(self, now_s: float) -> bool:
        return self.expires_at_s is not None and now_s >= self.expires_at_s
