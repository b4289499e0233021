"""Decompressing message payloads, for the code that must read inside them.

The broker never calls this: it stores and forwards payloads as they came.
Spark and other readers of single messages do. ZLIB uses the standard
library; LZ4 (raw block), ZSTD and SNAPPY (raw, unframed) need the optional
``cramjam`` package (pip install cramjam); without it those raise
``CompressionUnavailableError``.
"""

from __future__ import annotations

import zlib
from types import ModuleType

from pulsar_common.wire import errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

try:  # Optional: only readers of compressed batches need it.
    import cramjam as _cramjam
except ImportError:  # pragma: no cover - depends on the environment
    _cramjam_module: ModuleType | None = None
else:
    _cramjam_module = _cramjam

OPTIONAL_PACKAGE = "cramjam"


def available() -> frozenset[int]:
    """CompressionType values this process can decompress."""
    always = {pb.NONE, pb.ZLIB}
    if _cramjam_module is not None:
        always |= {pb.LZ4, pb.ZSTD, pb.SNAPPY}
    return frozenset(always)


def decompress(compression: int, data: frame.Buffer, uncompressed_size: int) -> bytes:
    """The payload before compression; its length must be ``uncompressed_size``."""
    if compression == pb.NONE:
        return bytes(data)
    if compression not in (pb.ZLIB, pb.LZ4, pb.ZSTD, pb.SNAPPY):
        raise errors.DecompressionError(f"unknown compression type {compression}")
    if compression != pb.ZLIB and _cramjam_module is None:
        name = pb.CompressionType.Name(compression)
        raise errors.CompressionUnavailableError(
            f"{name} payloads need the optional package {OPTIONAL_PACKAGE!r}"
        )
    try:
        result = _decompress(compression, data, uncompressed_size)
    except Exception as exc:  # codecs raise their own error types
        name = pb.CompressionType.Name(compression)
        raise errors.DecompressionError(f"{name} payload does not decompress: {exc}") from exc
    if len(result) != uncompressed_size:
        raise errors.DecompressionError(
            f"payload decompressed to {len(result)} bytes, metadata says {uncompressed_size}"
        )
    return result


def _decompress(compression: int, data: frame.Buffer, uncompressed_size: int) -> bytes:
    if compression == pb.ZLIB:
        inflater = zlib.decompressobj()
        result = inflater.decompress(data, uncompressed_size + 1)
        return result
    assert _cramjam_module is not None
    if compression == pb.LZ4:
        return bytes(
            _cramjam_module.lz4.decompress_block(bytes(data), output_len=uncompressed_size)
        )
    if compression == pb.ZSTD:
        return bytes(_cramjam_module.zstd.decompress(bytes(data), output_len=uncompressed_size))
    return bytes(_cramjam_module.snappy.decompress_raw(bytes(data)))
