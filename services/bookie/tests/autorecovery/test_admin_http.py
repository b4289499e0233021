"""BookKeeper's admin endpoints on real bookies running the autorecovery daemon: listing,
the delay and trigger_audit, and a decommission from read-only to cookie removal."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.service import registration, testing
from pulsar_common.metadata import api as metadata_api

from .conftest import (
    Cluster,
    assert_fully_replicated,
    eventually,
    payload,
    references,
    write_closed_ledgers,
)

pytestmark = pytest.mark.slow

def metric_values(bookie: testing.BookieProcess) -> dict[str, float]:
    status, body = bookie.http_get("/metrics")
    assert status == 200
    return {sample.name: sample.value
            for family in text_string_to_metric_families(body.decode())
            for sample in family.samples if sample.name.startswith("bookie_autorecovery")}


DAEMON = {"autoRecoveryDaemonEnabled": "true", "lostBookieRecoveryDelay": "0",
          "openLedgerRereplicationGracePeriod": "600000"}


async def test_decommission_drains_a_live_bookie_then_its_cookie_can_be_removed(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 5, DAEMON)
    created = await write_closed_ledgers(ledgers, count=6, entries=100)
    single_copy = []  # E=WQ=AQ=1: drained only by reading from the bookie being drained
    for _ in range(4):
        handle = await ledgers.create_ledger(1, 1, 1)
        for entry in range(20):
            await handle.append(payload(handle.ledger_id, entry))
        await handle.close()
        single_copy.append(handle.metadata.ensembles[0].ensemble[0])
    counts = {b.bookie_id: len(await references(store, b.bookie_id)) for b in cluster.bookies}
    victim = cluster.bookie(max(counts, key=lambda b: (b in single_copy, counts[b])))
    assert victim.bookie_id in single_copy
    admin = next(b for b in cluster.bookies if b is not victim)
    http = cluster.http_json

    status, listed = http(admin, "GET", "/api/v1/bookie/list_bookies?type=rw&print_hostnames=true")
    assert status == 200 and listed == {b.bookie_id: "127.0.0.1" for b in cluster.bookies}
    status, auditor = http(admin, "GET", "/api/v1/autorecovery/who_is_auditor")
    assert status == 200 and isinstance(auditor, dict)
    assert auditor["Auditor"] in {b.bookie_id for b in cluster.bookies}
    assert http(admin, "GET", "/api/v1/autorecovery/list_under_replicated_ledger")[0] == 404
    assert http(admin, "PUT", "/api/v1/autorecovery/decommission", {})[0] == 400
    assert http(admin, "PUT", "/api/v1/autorecovery/decommission",
                {"bookie_src": "no-such-host:3181"})[0] == 404

    status, started = http(admin, "PUT", "/api/v1/autorecovery/decommission",
                           {"bookie_src": victim.bookie_id})
    assert status == 200 and isinstance(started, dict) and started["decommissioning"]
    assert http(victim, "GET", "/api/v1/bookie/state/readonly") == (200, {"readOnly": True})
    status, listed = http(admin, "GET", "/api/v1/bookie/list_bookies?type=ro")
    assert listed == {victim.bookie_id: None}

    def drained() -> bool:
        status, progress = http(admin, "GET",
                                f"/api/v1/autorecovery/decommission?bookie_src={victim.bookie_id}")
        return status == 200 and isinstance(progress, dict) and progress["drained"] is True

    async def drained_async() -> bool:
        return await asyncio.to_thread(drained)

    await eventually(drained_async, 60, f"{victim.bookie_id} drained")
    assert await references(store, victim.bookie_id) == []
    scraped = [metric_values(b) for b in cluster.bookies]
    assert sum(m["bookie_autorecovery_auditor"] for m in scraped) == 1
    assert sum(m["bookie_autorecovery_ledgers_replicated_total"]
               for m in scraped) >= counts[victim.bookie_id]
    status, refused = http(admin, "DELETE",
                           f"/api/v1/autorecovery/decommission?bookie_src={victim.bookie_id}")
    assert status == 409 and "still registered" in str(refused)

    await asyncio.to_thread(victim.stop)
    status, removed = http(admin, "DELETE",
                           f"/api/v1/autorecovery/decommission?bookie_src={victim.bookie_id}")
    assert status == 200, removed
    assert await store.get(registration.cookie_path(victim.bookie_id)) is None
    live = {b.bookie_id for b in cluster.bookies} - {victim.bookie_id}
    assert await assert_fully_replicated(store, pool, live) == (
        len(created) * 100 * 2 + len(single_copy) * 20)


async def test_a_lost_bookie_waits_for_the_delay_unless_an_audit_is_triggered(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4, DAEMON)
    [ledger_id] = await write_closed_ledgers(ledgers, count=1, entries=200)
    admin, *_ = cluster.bookies
    http = cluster.http_json
    path = "/api/v1/autorecovery/lost_bookie_recovery_delay"
    assert http(admin, "GET", path) == (200, "lostBookieRecoveryDelay value: 0")
    assert http(admin, "PUT", path, {"delay_seconds": "soon"})[0] == 400
    assert http(admin, "PUT", path, {"delay_seconds": 3600})[0] == 200
    assert http(admin, "GET", path) == (200, "lostBookieRecoveryDelay value: 3600")

    ensemble = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble
    victim = next(b for b in ensemble if b != admin.bookie_id)
    cluster.lose(victim)

    async def unregistered() -> bool:
        return victim not in {b.bookie_id for b in await registration.list_bookies(store)}

    await eventually(unregistered, 30, f"{victim} unregistered")
    # A new value (an operator pausing recovery for a rolling restart) audits nothing now.
    assert http(admin, "PUT", path, {"delay_seconds": 7200})[0] == 200
    # Nothing to wait for: the auditor saw the changes and must leave the ledger alone.
    await asyncio.sleep(1.0)
    assert http(admin, "GET", "/api/v1/autorecovery/list_under_replicated_ledger")[0] == 404
    assert await references(store, victim) == [ledger_id]

    assert http(admin, "PUT", "/api/v1/autorecovery/trigger_audit")[0] == 200

    async def recovered() -> bool:
        return not await references(store, victim)

    await eventually(recovered, 60, f"no ledger on {victim}")
    live = {b.bookie_id for b in cluster.bookies} - {victim}
    assert await assert_fully_replicated(store, pool, live) == 200 * 2
    # Three bookies left for ensembles of three: decommissioning one more must be refused.
    status, refused = http(admin, "PUT", "/api/v1/autorecovery/decommission",
                           {"bookie_src": next(iter(live - {admin.bookie_id}))})
    assert status == 409 and "other writable bookies" in str(refused)
