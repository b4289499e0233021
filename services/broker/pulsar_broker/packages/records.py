"""What the metadata store keeps of one package version, and Apache's PackageMetadata JSON.

The record at `/packages/<type>/<tenant>/<namespace>/<name>/<version>` holds
the user's metadata (description, contact, createTime, modificationTime,
properties: Apache's PackageMetadata fields) and where the bytes are: the
ledger id, the size and a SHA-256 of the content. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from pulsar_broker.packages import errors, names

ROOT = "/packages"


@dataclasses.dataclass(frozen=True)
class PackageMetadata:
    description: str = ""
    contact: str = ""
    create_time_ms: int = 0
    modification_time_ms: int = 0
    properties: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"description": self.description, "contact": self.contact,
                "createTime": self.create_time_ms,
                "modificationTime": self.modification_time_ms,
                "properties": dict(self.properties)}

    @classmethod
    def from_json(cls, value: Any) -> PackageMetadata:
        """Apache's PackageMetadata JSON; null fields are empty."""
        if not isinstance(value, dict):
            raise errors.InvalidPackageMetadataError("invalid package metadata")
        properties = value.get("properties") or {}
        if not isinstance(properties, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in properties.items()):
            raise errors.InvalidPackageMetadataError(
                "package metadata properties must map strings to strings")
        try:
            return cls(str(value.get("description") or ""), str(value.get("contact") or ""),
                       int(value.get("createTime") or 0),
                       int(value.get("modificationTime") or 0), dict(properties))
        except (TypeError, ValueError) as exc:
            raise errors.InvalidPackageMetadataError("invalid package metadata") from exc


@dataclasses.dataclass(frozen=True)
class StoredPackage:
    metadata: PackageMetadata
    ledger_id: int
    size_bytes: int
    sha256: str

    def to_bytes(self) -> bytes:
        return json.dumps({"metadata": self.metadata.to_json(), "ledgerId": self.ledger_id,
                           "size": self.size_bytes, "sha256": self.sha256}).encode()

    @classmethod
    def from_bytes(cls, raw: bytes) -> StoredPackage:
        value = json.loads(raw)
        return cls(PackageMetadata.from_json(value["metadata"]), int(value["ledgerId"]),
                   int(value["size"]), str(value["sha256"]))


def namespace_path(type_: names.PackageType, tenant: str, namespace: str) -> str:
    return f"{ROOT}/{type_.value}/{tenant}/{namespace}"


def versions_path(name: names.PackageName) -> str:
    return f"{namespace_path(name.type, name.tenant, name.namespace)}/{name.name}"


def record_path(name: names.PackageName) -> str:
    return f"{versions_path(name)}/{name.version}"
