"""Finding each ledger's metadata (its bookies) for the planner.

Two sources, tried in order: a `metadata` object the broker may include per
ledger in internalStats (Apache does with `?metadata=true`), and the metadata
store itself when the `metadata.url` option names it (`etcd:http://host:2379`;
clusters keep ledger records under /ledgers/<id>). An embedded RocksDB store
belongs to its standalone process and cannot be opened from Spark.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

from pulsar_bookie.client import ledger_metadata
from pulsar_common.metadata import factory as metadata_factory

from pulsar_spark import errors


def from_stats(stats: dict[str, Any]) -> dict[int, bytes]:
    """Ledger metadata records that came inside internalStats, by ledger id."""
    found: dict[int, bytes] = {}
    for item in stats.get("ledgers", []):
        record = item.get("metadata")
        if isinstance(record, str) and record.startswith("{"):
            record = json.loads(record)
        if isinstance(record, dict) and "ensembles" in record:
            found[int(item["ledgerId"])] = json.dumps(record, sort_keys=True).encode()
    return found


def from_store(metadata_url: str, ledger_ids: Iterable[int]) -> dict[int, bytes]:
    """Ledger metadata records read from the metadata store (the cluster's etcd)."""
    return asyncio.run(_read_all(metadata_url, sorted(set(ledger_ids))))


async def _read_all(metadata_url: str, ledger_ids: list[int]) -> dict[int, bytes]:
    try:
        store = await metadata_factory.create_store(metadata_url)
    except Exception as exc:  # the factory raises config and connection errors of its own
        raise errors.LedgerMetadataError(
            f"cannot open the metadata store {metadata_url!r} (option metadata.url): {exc}") from exc
    try:
        ledgers = ledger_metadata.LedgerMetadataStore(store)
        found = {}
        for ledger_id in ledger_ids:
            try:
                versioned = await ledgers.read(ledger_id)
            except Exception as exc:
                raise errors.LedgerMetadataError(
                    f"ledger {ledger_id}: no metadata in {metadata_url}: {exc}") from exc
            found[ledger_id] = ledger_metadata.to_json(versioned.metadata)
        return found
    finally:
        await store.close()


def missing_metadata_error(ledger_ids: Iterable[int]) -> errors.LedgerMetadataError:
    return errors.LedgerMetadataError(
        f"no metadata for ledgers {sorted(ledger_ids)}: the broker's internalStats does not "
        "include ledger metadata, so give option metadata.url (the cluster's metadata store, "
        "e.g. etcd:http://127.0.0.1:2379) to find the bookies that hold them")
