"""The etcd v3 calls the etcd backend needs, over aetcd's gRPC channel, with our errors.

aetcd's own transaction helper hides the response header and the results of
range reads that found nothing, so ranges and transactions go straight to
the KV stub. Every response's revision is remembered: a watch opened later
starts right after the newest revision this client has seen, so it never
misses a change made after the watch was asked for.

Values carry a small header with creation and modification time (etcd keeps
no clock); a value without it (written by another tool) reads with time 0.
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import aetcd
from aetcd import rpc

from pulsar_common.metadata import errors

_MAGIC = b"\xffPM\x01"
_TIMES = struct.Struct(">qq")
_HEADER_SIZE = len(_MAGIC) + _TIMES.size

_UNAVAILABLE_CODES = {
    rpc.StatusCode.UNAVAILABLE,
    rpc.StatusCode.DEADLINE_EXCEEDED,
    rpc.StatusCode.CANCELLED,
}


def encode_value(value: bytes, creation_ms: int, modification_ms: int) -> bytes:
    return _MAGIC + _TIMES.pack(creation_ms, modification_ms) + value


@dataclasses.dataclass(frozen=True)
class Decoded:
    value: bytes
    creation_ms: int
    modification_ms: int


def decode_value(raw: bytes) -> Decoded:
    if raw.startswith(_MAGIC) and len(raw) >= _HEADER_SIZE:
        ctime, mtime = _TIMES.unpack_from(raw, len(_MAGIC))
        return Decoded(raw[_HEADER_SIZE:], ctime, mtime)
    return Decoded(raw, 0, 0)


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Turn aetcd and gRPC failures into metadata store errors (chained)."""
    try:
        yield
    except (TimeoutError, aetcd.ConnectionFailedError, aetcd.ConnectionTimeoutError) as exc:
        raise errors.StoreUnavailableError(f"etcd unreachable during {what}: {exc}") from exc
    except rpc.AioRpcError as exc:
        if exc.code() in _UNAVAILABLE_CODES:
            raise errors.StoreUnavailableError(
                f"etcd unreachable during {what}: {exc.details()}") from exc
        if exc.code() == rpc.StatusCode.NOT_FOUND and "lease" in (exc.details() or ""):
            raise errors.SessionLostError(f"{what}: the lease is gone") from exc
        raise errors.MetadataStoreError(f"etcd failed {what}: {exc.details()}") from exc
    except aetcd.ClientError as exc:
        if "lease not found" in str(exc):
            raise errors.SessionLostError(f"{what}: the lease is gone") from exc
        raise errors.MetadataStoreError(f"etcd failed {what}: {exc}") from exc


def prefix_end(prefix: bytes) -> bytes:
    """The first key after every key that starts with prefix."""
    return bytes(aetcd.utils.prefix_range_end(prefix))


def compare_absent(key: bytes) -> Any:
    return rpc.Compare(key=key, target=rpc.Compare.CREATE, result=rpc.Compare.EQUAL,
                       create_revision=0)


def compare_exists(key: bytes) -> Any:
    return rpc.Compare(key=key, target=rpc.Compare.VERSION, result=rpc.Compare.GREATER,
                       version=0)


def compare_version(key: bytes, etcd_version: int) -> Any:
    return rpc.Compare(key=key, target=rpc.Compare.VERSION, result=rpc.Compare.EQUAL,
                       version=etcd_version)


def compare_mod(key: bytes, mod_revision: int) -> Any:
    return rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL,
                       mod_revision=mod_revision)


def op_put(key: bytes, value: bytes, lease: int = 0) -> Any:
    return rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=value, lease=lease))


def op_get(key: bytes) -> Any:
    return rpc.RequestOp(request_range=rpc.RangeRequest(key=key))


def op_delete(key: bytes, range_end: bytes | None = None) -> Any:
    request = rpc.DeleteRangeRequest(key=key)
    if range_end is not None:
        request.range_end = range_end
    return rpc.RequestOp(request_delete_range=request)


class EtcdKv:
    """Ranges and transactions on one aetcd client; tracks the newest revision seen."""

    def __init__(self, client: aetcd.Client, timeout_s: float) -> None:
        self.client = client
        self.timeout_s = timeout_s
        self.revision = 0

    def _seen(self, response: Any) -> None:
        self.revision = max(self.revision, int(response.header.revision))

    async def get(self, key: bytes) -> Any | None:
        """The raw KeyValue at key, or None."""
        kvs = await self.range(key)
        return kvs[0] if kvs else None

    async def range(self, key: bytes, range_end: bytes | None = None,
                    keys_only: bool = False) -> Sequence[Any]:
        request = rpc.RangeRequest(key=key, keys_only=keys_only)
        if range_end is not None:
            request.range_end = range_end
        with translated("a read"):
            await self.client.connect()
            response = await self.client.kvstub.Range(
                request, timeout=self.timeout_s, metadata=self.client.metadata)
        self._seen(response)
        return list(response.kvs)

    async def txn(self, compare: Sequence[Any], success: Sequence[Any],
                  failure: Sequence[Any] = ()) -> Any:
        request = rpc.TxnRequest(compare=list(compare), success=list(success),
                                 failure=list(failure))
        with translated("a transaction"):
            await self.client.connect()
            response = await self.client.kvstub.Txn(
                request, timeout=self.timeout_s, metadata=self.client.metadata)
        self._seen(response)
        return response


def first_range_kv(response: Any, index: int = 0) -> Any | None:
    """The KeyValue read by the range op at index of a transaction response, or None."""
    kvs = response.responses[index].response_range.kvs
    return kvs[0] if kvs else None
