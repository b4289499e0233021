"""Opens the metadata store a URL names, in Apache Pulsar's `metadataStoreUrl` style.

    etcd:http://host:2379[,http://host2:2379]   etcd, Apache style
    etcd:https://host:2379                      etcd over TLS (files: etcd_tls)
    etcd://host:2379[,host2:2379]               etcd, short form
    rocksdb:/var/lib/pulsar/metadata            embedded RocksDB (also rocksdb:///path)

An etcd URL may end in a path (`etcd://host:2379/pulsar/cluster-a`): the
store then lives under that chroot. With several etcd endpoints, gRPC picks a
reachable one and fails over to the others (host names are resolved once,
when the store is opened).
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
import urllib.parse

from pulsar_common import errors
from pulsar_common.metadata import api, etcd, etcd_tls, paths, rocksdb
from pulsar_common.metadata import errors as metadata_errors

#: Default session timeout (Pulsar's metadataStoreSessionTimeoutMillis is 30000).
SESSION_TIMEOUT_S = 30.0


@dataclasses.dataclass(frozen=True)
class EtcdTarget:
    endpoints: tuple[tuple[str, int], ...]
    chroot: str
    #: The endpoints are https:// (etcd over TLS).
    secure: bool = False


async def create_store(
    url: str,
    *,
    session_timeout_s: float = SESSION_TIMEOUT_S,
    chroot: str = "",
    tls: etcd_tls.EtcdTls | None = None,
) -> api.MetadataStore:
    """Open the store url names; chroot (if given) replaces a chroot in the URL. etcd is
    reached over TLS with tls (Apache's metadataStoreConfigPath, see etcd_tls) or when the
    URL's endpoints are https:// (then with the system's CAs unless tls says otherwise)."""
    if session_timeout_s <= 0:
        raise errors.ConfigError(f"session timeout must be positive, got {session_timeout_s}")
    if url.startswith("rocksdb:"):
        return await rocksdb.RocksdbMetadataStore.open(
            parse_rocksdb_url(url), chroot=_checked_chroot(chroot))
    if url.startswith("etcd:"):
        target = parse_etcd_url(url)
        host, port = await _grpc_target(target.endpoints)
        if tls is None and target.secure:
            tls = etcd_tls.EtcdTls()
        return await etcd.EtcdMetadataStore.connect(
            host, port, chroot=_checked_chroot(chroot or target.chroot),
            session_timeout_s=session_timeout_s, tls=tls)
    raise errors.ConfigError(
        f"unsupported metadata store URL {url!r}: use etcd:http://host:port[,...], "
        "etcd://host:port[,...] or rocksdb:/path")


def _checked_chroot(chroot: str) -> str:
    try:
        return paths.validate_chroot(chroot)
    except metadata_errors.InvalidPathError as exc:
        raise errors.ConfigError(f"invalid metadata chroot {chroot!r}") from exc


def parse_rocksdb_url(url: str) -> str:
    """The directory of a rocksdb: URL."""
    rest = url[len("rocksdb:"):]
    if rest.startswith("//"):
        parsed = urllib.parse.urlsplit(url)
        if parsed.netloc not in ("", "localhost"):
            raise errors.ConfigError(f"rocksdb URL cannot name a host: {url!r}")
        rest = parsed.path
    if not rest:
        raise errors.ConfigError(f"rocksdb URL has no directory: {url!r}")
    return rest


def parse_etcd_url(url: str) -> EtcdTarget:
    """Endpoints and chroot of an etcd: URL (either form)."""
    rest = url[len("etcd:"):]
    if rest.startswith("//"):
        items = [f"http:{item}" if i == 0 else f"http://{item}"
                 for i, item in enumerate(rest.split(","))]
    else:
        items = rest.split(",")
    endpoints: list[tuple[str, int]] = []
    chroots: set[str] = set()
    schemes: set[str] = set()
    for item in items:
        host, port, chroot = _parse_endpoint(item.strip(), url)
        endpoints.append((host, port))
        schemes.add(urllib.parse.urlsplit(item.strip()).scheme)
        if chroot:
            chroots.add(chroot)
    if len(chroots) > 1:
        raise errors.ConfigError(f"etcd URL names different chroots: {url!r}")
    if len(schemes) > 1:
        raise errors.ConfigError(f"etcd URL mixes http:// and https:// endpoints: {url!r}")
    return EtcdTarget(tuple(endpoints), chroots.pop() if chroots else "", schemes == {"https"})


def _parse_endpoint(item: str, url: str) -> tuple[str, int, str]:
    parsed = urllib.parse.urlsplit(item)
    if parsed.scheme not in ("http", "https"):
        raise errors.ConfigError(
            f"etcd endpoint {item!r} in {url!r} must be http://host:port or https://host:port")
    try:
        port = parsed.port or 2379
    except ValueError as exc:
        raise errors.ConfigError(f"bad port in etcd endpoint {item!r}") from exc
    if not parsed.hostname:
        raise errors.ConfigError(f"etcd endpoint {item!r} in {url!r} has no host")
    chroot = parsed.path.rstrip("/")
    return parsed.hostname, port, chroot


async def _grpc_target(endpoints: tuple[tuple[str, int], ...]) -> tuple[str, int]:
    """(host, port) for aetcd; several endpoints become one gRPC `ipv4:`/`ipv6:` target."""
    if len(endpoints) == 1:
        return endpoints[0]
    addresses = [(await _resolve(host, port), port) for host, port in endpoints]
    versions = {ipaddress.ip_address(ip).version for ip, _ in addresses}
    if versions == {4}:
        listed = ",".join(f"{ip}:{port}" for ip, port in addresses)
        scheme = "ipv4"
    elif versions == {6}:
        listed = ",".join(f"[{ip}]:{port}" for ip, port in addresses)
        scheme = "ipv6"
    else:
        raise errors.ConfigError("etcd endpoints mix IPv4 and IPv6 addresses")
    # aetcd joins host and port as f"{host}:{port}": split the target before the last port.
    head, _, last_port = f"{scheme}:{listed}".rpartition(":")
    return head, int(last_port)


async def _resolve(host: str, port: int) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise metadata_errors.StoreUnavailableError(f"cannot resolve etcd host {host}") from exc
    return str(infos[0][4][0])
