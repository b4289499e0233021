"""TLS for every listener and client of the project, built from Apache's settings.

A server listener (broker binary and HTTPS ports, proxy ports) gets one
`ssl.SSLContext` from `server_context`; `CertificateReloader` watches the
certificate, key and trust files and, when one changes, builds a fresh
context that every handshake after that uses (the listener's context hands
the handshake over to it in its SNI callback, which OpenSSL calls for every
ClientHello, with or without a server name). Connections already open keep
the certificate they were set up with, as in Apache.

Client-side contexts (proxy to broker, CLIs, the broker's HTTP calls to other
brokers) come from `client_context`.

Apache's setting names are used by the services' config classes; this module
takes them as a `TlsSettings` record so it knows nothing about any one
service.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import ssl
from collections.abc import Iterable

from pulsar_common import errors

log = logging.getLogger(__name__)

#: Apache's protocol names (tlsProtocols) -> the ssl module's versions.
PROTOCOLS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclasses.dataclass(frozen=True)
class TlsSettings:
    """One side's TLS material and rules, by Apache's meaning.

    require_trusted_client_cert: clients must present a certificate signed by a CA in
    trust_certs_file (tlsRequireTrustedClientCertOnConnect). Otherwise a certificate is
    asked for and verified when sent (TLS authentication reads its CN), never required.
    allow_insecure_connection: a listener asks for no client certificate (the ssl module
    cannot accept one that fails verification), a client context accepts any server
    certificate (tlsAllowInsecureConnection).
    """

    cert_file: str = ""
    key_file: str = ""
    trust_certs_file: str = ""
    allow_insecure_connection: bool = False
    require_trusted_client_cert: bool = False
    protocols: tuple[str, ...] = ()
    ciphers: tuple[str, ...] = ()
    hostname_verification: bool = False

    @property
    def watched_files(self) -> tuple[str, ...]:
        return tuple(path for path in (self.cert_file, self.key_file, self.trust_certs_file)
                     if path)


def check_protocols(protocols: Iterable[str]) -> None:
    """ConfigError for a protocol name we cannot honour (Apache: TLSv1.2, TLSv1.3)."""
    for name in protocols:
        if name not in PROTOCOLS:
            raise errors.ConfigError(f"tlsProtocols: unsupported protocol {name!r} "
                                     f"(supported: {', '.join(PROTOCOLS)})")


def _apply_protocols_and_ciphers(context: ssl.SSLContext, settings: TlsSettings) -> None:
    check_protocols(settings.protocols)
    if settings.protocols:
        versions = sorted(PROTOCOLS[name] for name in settings.protocols)
        context.minimum_version = versions[0]
        context.maximum_version = versions[-1]
    else:
        context.minimum_version = ssl.TLSVersion.TLSv1_2
    if settings.ciphers:
        # OpenSSL names (ECDHE-RSA-AES128-GCM-SHA256); TLSv1.3 suites are not affected by
        # set_ciphers and stay enabled unless tlsProtocols leaves TLSv1.3 out.
        try:
            context.set_ciphers(":".join(settings.ciphers))
        except ssl.SSLError as exc:
            raise errors.ConfigError(f"tlsCiphers: no usable cipher in {settings.ciphers}") from exc


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """A context for a listener; ConfigError when the files are missing or do not load."""
    if not settings.cert_file or not settings.key_file:
        raise errors.ConfigError("a TLS port needs tlsCertificateFilePath and tlsKeyFilePath")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _apply_protocols_and_ciphers(context, settings)
    try:
        context.load_cert_chain(settings.cert_file, settings.key_file)
        if settings.trust_certs_file:
            context.load_verify_locations(settings.trust_certs_file)
    except (OSError, ssl.SSLError) as exc:
        raise errors.ConfigError(f"cannot load TLS files {settings.watched_files}: {exc}") from exc
    if settings.require_trusted_client_cert and not settings.allow_insecure_connection:
        if not settings.trust_certs_file:
            raise errors.ConfigError("tlsRequireTrustedClientCertOnConnect needs "
                                     "tlsTrustCertsFilePath")
        context.verify_mode = ssl.CERT_REQUIRED
    elif settings.trust_certs_file and not settings.allow_insecure_connection:
        # Asked for, checked when sent, not required: TLS authentication reads the CN.
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """A context for connecting to a TLS server (broker, proxy)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocols_and_ciphers(context, settings)
    if settings.allow_insecure_connection:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = settings.hostname_verification
        try:
            if settings.trust_certs_file:
                context.load_verify_locations(settings.trust_certs_file)
            else:
                context.load_default_certs()
        except (OSError, ssl.SSLError) as exc:
            raise errors.ConfigError(
                f"cannot load TLS trust file {settings.trust_certs_file}: {exc}") from exc
    if settings.cert_file and settings.key_file:
        try:
            context.load_cert_chain(settings.cert_file, settings.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise errors.ConfigError(f"cannot load TLS client certificate "
                                     f"{settings.cert_file}: {exc}") from exc
    return context


def peer_certificate_common_name(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The CN of the verified client certificate of a connection, None without one."""
    if ssl_object is None:
        return None
    cert = ssl_object.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for attribute in rdn:
            if attribute[0] == "commonName":
                return str(attribute[1])
    return None


def _mtimes(paths: Iterable[str]) -> tuple[float, ...]:
    found = []
    for path in paths:
        try:
            found.append(os.stat(path).st_mtime)
        except OSError:
            found.append(-1.0)
    return tuple(found)


class CertificateReloader:
    """A listener's context whose handshakes use the newest certificate files.

    `context` is given to the listener once. Every `refresh_check_s` (Apache's
    tlsCertRefreshCheckDurationSec; 0 turns watching off) the files' modification times
    are compared; on a change a new context is built and used by the next handshakes. A
    change that does not load (a half-written file) is logged and retried at the next
    check, the previous certificate staying in use.
    """

    def __init__(self, settings: TlsSettings, refresh_check_s: float) -> None:
        self.settings = settings
        self.refresh_check_s = refresh_check_s
        self._current = server_context(settings)
        self._stamps = _mtimes(settings.watched_files)
        self.context = server_context(settings)
        self.context.sni_callback = self._pick_context
        self._task: asyncio.Task[None] | None = None
        #: How many times new files were loaded (for tests and logs).
        self.reloads = 0

    def _pick_context(self, ssl_object: ssl.SSLObject, _server_name: str | None,
                      _context: ssl.SSLContext) -> None:
        ssl_object.context = self._current

    def check_now(self) -> bool:
        """Reload when a watched file changed since the last load; True when it did."""
        stamps = _mtimes(self.settings.watched_files)
        if stamps == self._stamps:
            return False
        try:
            fresh = server_context(self.settings)
        except errors.ConfigError as exc:
            log.warning("TLS files changed but do not load yet, keeping the old ones: %s", exc)
            return False
        self._current = fresh
        self._stamps = stamps
        self.reloads += 1
        log.info("TLS certificate reloaded from %s", ", ".join(self.settings.watched_files))
        return True

    def start(self) -> None:
        if self.refresh_check_s > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_check_s)
            self.check_now()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
