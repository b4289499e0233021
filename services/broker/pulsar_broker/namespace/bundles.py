"""Namespace bundles: the hash ranges a namespace's topics fall into, the unit of ownership.

A namespace's policies list bundle boundaries over the 32-bit hash space
("0x00000000", ..., "0xffffffff"); a topic belongs to the bundle whose range
holds the CRC32 of its full name (partitions hash by their own names, so the
partitions of one topic spread over bundles), as Apache Pulsar's default
bundle factory computes it. Ranges are written "0x00000000_0x40000000".
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any

from pulsar_common import naming

from pulsar_broker import errors

RANGE_RE = re.compile(r"^0x([0-9a-fA-F]{8})_0x([0-9a-fA-F]{8})$")


@dataclasses.dataclass(frozen=True)
class NamespaceBundle:
    namespace: naming.NamespaceName
    lower: int
    upper: int
    #: The last bundle of a namespace also holds its upper bound (0xffffffff).
    closed: bool = False

    @property
    def range(self) -> str:
        return f"0x{self.lower:08x}_0x{self.upper:08x}"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.range}"

    def holds(self, hash_code: int) -> bool:
        return self.lower <= hash_code < self.upper or (self.closed and hash_code == self.upper)


def topic_hash(topic: naming.TopicName) -> int:
    return zlib.crc32(str(topic).encode()) & 0xFFFFFFFF


def bundles_of(ns: naming.NamespaceName, policies: dict[str, Any]) -> list[NamespaceBundle]:
    """The bundles a namespace's policies declare, in hash order."""
    boundaries = [int(b, 16) for b in (policies.get("bundles") or {}).get("boundaries") or []]
    if len(boundaries) < 2:
        boundaries = [0, 0xFFFFFFFF]
    last = len(boundaries) - 2
    return [NamespaceBundle(ns, boundaries[i], boundaries[i + 1], i == last)
            for i in range(len(boundaries) - 1)]


def bundle_of(topic: naming.TopicName, policies: dict[str, Any]) -> NamespaceBundle:
    hash_code = topic_hash(topic)
    for bundle in bundles_of(topic.namespace_name, policies):
        if bundle.holds(hash_code):
            return bundle
    raise errors.BrokerError(f"no bundle of {topic.namespace_name} holds the hash of {topic}")


def find_bundle(ns: naming.NamespaceName, policies: dict[str, Any], text: str) -> NamespaceBundle:
    """The namespace's bundle named by its range text; 404 when the namespace has no such bundle."""
    match = RANGE_RE.match(text)
    if match is None:
        raise errors.InvalidRequestError(f"Invalid bundle range {text!r}: expected 0x..._0x...")
    lower, upper = int(match[1], 16), int(match[2], 16)
    for bundle in bundles_of(ns, policies):
        if (bundle.lower, bundle.upper) == (lower, upper):
            return bundle
    raise errors.NotFoundError(f"Namespace bundle {ns}/{text} does not exist")
