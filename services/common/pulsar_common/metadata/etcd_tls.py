"""etcd over TLS: Apache's metadata store configuration file and a gRPC channel with TLS.

Apache names a file with `metadataStoreConfigPath`; for etcd its keys are
`useTls`, `tlsTrustCertsFilePath` (CAs the etcd server certificate is checked
against), `tlsCertificateFilePath` / `tlsKeyFilePath` (a client certificate,
for etcd's `--client-cert-auth`) and `authority` (the name expected in the
server certificate when it is not the host connected to). The file may be
written `key=value` or `key: value` (YAML-style lines).

aetcd opens only plain channels, so `TlsClient` opens the same stubs on a
`grpc.aio.secure_channel`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from typing import Any

import aetcd
import grpc
from aetcd import rpc, watcher
from aetcd.client import _handle_errors

from pulsar_common import config, errors


@dataclasses.dataclass(frozen=True)
class EtcdTls:
    trust_certs_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    authority: str = ""

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC TLS credentials; ConfigError when a file cannot be read."""

        def read(path: str) -> bytes | None:
            if not path:
                return None
            try:
                return pathlib.Path(path).read_bytes()
            except OSError as exc:
                raise errors.ConfigError(f"etcd TLS: cannot read {path}: {exc}") from exc

        return grpc.ssl_channel_credentials(read(self.trust_certs_file), read(self.key_file),
                                            read(self.cert_file))


def _true(value: str) -> bool:
    return value.strip().strip("'\"").lower() == "true"


def read_config(path: str) -> EtcdTls | None:
    """The TLS settings of Apache's metadataStoreConfigPath file; None without the file or
    when useTls is not true."""
    if not path:
        return None
    try:
        values = config.read_properties(pathlib.Path(path).read_text())
    except OSError as exc:
        raise errors.ConfigError(f"metadataStoreConfigPath {path}: {exc}") from exc
    values = {key: value.strip().strip("'\"") for key, value in values.items()}
    if not _true(values.get("useTls", "false")):
        return None
    return EtcdTls(values.get("tlsTrustCertsFilePath", ""), values.get("tlsCertificateFilePath", ""),
                   values.get("tlsKeyFilePath", ""), values.get("authority", ""))


class TlsClient(aetcd.Client):  # type: ignore[misc]
    """aetcd's client on a TLS channel (the same stubs and watcher as its connect opens)."""

    def __init__(self, tls: EtcdTls, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tls_credentials = tls.credentials()
        if tls.authority:
            self._options["grpc.ssl_target_name_override"] = tls.authority

    @_handle_errors  # type: ignore[untyped-decorator]
    async def connect(self) -> None:
        if self._connected.is_set():
            return
        if self._is_connecting:  # type: ignore[has-type]
            await asyncio.wait_for(self._connected.wait(), self._connect_wait_timeout)
            return
        try:
            self._is_connecting = True
            self.channel = rpc.secure_channel(f"{self._host}:{self._port}",
                                              self._tls_credentials,
                                              options=list(self._options.items()))
            self.kvstub = rpc.KVStub(self.channel)
            self.clusterstub = rpc.ClusterStub(self.channel)
            self.leasestub = rpc.LeaseStub(self.channel)
            self.maintenancestub = rpc.MaintenanceStub(self.channel)
            self._watcher = watcher.Watcher(rpc.WatchStub(self.channel), timeout=self._timeout,
                                            metadata=self.metadata)
            self._connected.set()
        finally:
            self._is_connecting = False
