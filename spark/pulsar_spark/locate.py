"""Finding each ledger's metadata (its bookies) for the planner.

Three sources. Named by options, used first: the metadata store
(`metadata.url`, e.g. `etcd:http://host:2379`; clusters keep ledger records
under /ledgers/<id>), or, for `pulsar standalone`, its one bookie
(`standalone.bookie`), which holds every ledger. Otherwise the `metadata` the
broker includes per ledger in `internalStats?metadata=true` (as Apache does).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

from pulsar_bookie import types as bookie_types
from pulsar_bookie.client import api as bookie_api
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


def on_standalone_bookie(bookie: str, ledger_ids: Iterable[int]) -> dict[int, bytes]:
    """Metadata of ledgers of a `pulsar standalone`: its one bookie holds every entry.

    Standalone writes every ledger with ensemble = write quorum = ack quorum = 1 on
    its embedded bookie and an empty password; the readable end comes from the
    broker, so the record only has to say where the entries are.
    """
    host, sep, port = bookie.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise errors.OptionError(f"option standalone.bookie={bookie!r} is not host:port")
    found = {}
    for ledger_id in ledger_ids:
        found[ledger_id] = ledger_metadata.to_json(bookie_api.LedgerMetadata(
            ledger_id=bookie_types.LedgerId(ledger_id), ensemble_size=1, write_quorum_size=1,
            ack_quorum_size=1, state=bookie_api.LedgerState.OPEN,
            last_entry_id=bookie_types.INVALID_ENTRY_ID, length=0,
            ensembles=(bookie_api.Fragment(bookie_types.EntryId(0),
                                           (bookie_types.BookieId(bookie),)),),
            ctime_ms=0))
    return found


def missing_metadata_error(ledger_ids: Iterable[int]) -> errors.LedgerMetadataError:
    return errors.LedgerMetadataError(
        f"no metadata for ledgers {sorted(ledger_ids)}: the broker's internalStats?metadata=true "
        "did not include it, so give option metadata.url (the cluster's metadata store, "
        "e.g. etcd:http://127.0.0.1:2379) or, for a `pulsar standalone`, option "
        "standalone.bookie (its bookie, host:bookiePort, 3181 by default)")
