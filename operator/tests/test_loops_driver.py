"""The loops' driver between the planners and the adapters: what it observes, that a step whose
action fails keeps the progress it had (so it is planned again), and what it reports. The
ports (Kubernetes objects, the bookies' admin API) are small in-memory stand-ins here; the
real ones are exercised by e2e/test_operator_loops_live.py."""

from __future__ import annotations

from typing import Any

from pulsar_operator import cluster_spec, errors
from pulsar_operator.loops import decommission, driver
from pulsar_operator.plan import ObjectRef

NOW = 10_000_000


class Objects:
    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects
        self.patches: list[tuple[str, dict[str, Any]]] = []

    async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.objects.get((ref.kind, ref.name))

    async def patch(self, ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]:
        self.patches.append((ref.name, patch))
        return self.objects[(ref.kind, ref.name)]

    async def delete(self, ref: ObjectRef) -> bool:
        return self.objects.pop((ref.kind, ref.name), None) is not None


class Bookies:
    """Four registered bookies; `fail` makes every write fail as an unreachable API would."""

    def __init__(self, ids: list[str], fail: bool = False) -> None:
        self.ids = ids
        self.fail = fail
        self.read_only: set[str] = set()
        self.calls: list[str] = []

    async def registered(self) -> tuple[set[str], set[str]] | None:
        return set(self.ids) - self.read_only, set(self.read_only)

    async def state(self, http_url: str) -> dict[str, Any] | None:
        return {"readOnly": False, "diskUsage": 0.1}

    def _write(self, what: str) -> None:
        self.calls.append(what)
        if self.fail:
            raise errors.AdminApiError("PUT", what, 503, "unavailable")

    async def set_read_only(self, http_url: str, read_only: bool) -> None:
        self._write(f"read-only {http_url} {read_only}")

    async def ledgers_on(self, bookie_id: str) -> int | None:
        return 2

    async def under_replicated(self) -> int | None:
        return 0

    async def decommission(self, bookie_id: str) -> None:
        self._write(f"decommission {bookie_id}")

    async def recovery_delay(self) -> int | None:
        return 60

    async def set_recovery_delay(self, seconds: int) -> None:
        self._write(f"delay {seconds}")

    async def forget(self, bookie_id: str) -> None:
        self._write(f"forget {bookie_id}")


def cluster(replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": "c", "namespace": "ns", "generation": 2},
            "spec": {"bookkeeper": {"replicas": replicas}}}


def objects(bookies: int) -> Objects:
    found: dict[tuple[str, str], dict[str, Any]] = {
        ("StatefulSet", "c-bookie"): {"spec": {"replicas": bookies}, "status": {"replicas": bookies}}}
    for i in range(bookies):
        found[("Pod", f"c-bookie-{i}")] = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    return Objects(found)


async def step(body: dict[str, Any], kube: Objects, bookies: Bookies) -> driver.Result:
    spec = cluster_spec.parse(body)
    result = await driver.step(body, spec, kube, lambda urls: bookies, NOW)
    assert result is not None
    return result


def ids(count: int) -> list[str]:
    return [driver.bookie_address(cluster_spec.parse(cluster(count)), i)[0] for i in range(count)]


async def test_a_lower_replica_count_makes_the_highest_bookie_read_only_and_records_the_phase() -> None:
    bookies = Bookies(ids(4))
    result = await step(cluster(3), objects(4), bookies)
    assert bookies.calls == ["read-only http://c-bookie-3.c-bookie.ns.svc:8000 True"]
    assert result.status["decommission"]["phase"] == "ReadOnly"
    assert result.status["decommission"]["ordinal"] == 3
    assert "DecommissionStarted" in [e.reason for e in result.events]
    assert result.status["autoRecovery"]["underReplicatedLedgers"] == 0


async def test_a_failed_action_keeps_the_progress_it_had_and_says_it_retries() -> None:
    body = cluster(3)
    body["status"] = {"decommission": decommission.Progress(3, decommission.Phase.DRAINING, NOW).to_status()}
    bookies = Bookies(ids(4), fail=True)
    bookies.read_only.add(ids(4)[3])
    kube = objects(4)
    result = await step(body, kube, bookies)
    assert bookies.calls == [f"decommission {ids(4)[3]}"]
    assert result.status["decommission"] == body["status"]["decommission"]
    retrying = next(c for c in result.conditions if c.type == decommission.CONDITION)
    assert retrying.reason == "Retrying" and kube.patches == []


async def test_nothing_is_observed_or_done_before_a_bookie_is_ready() -> None:
    kube = objects(4)
    for i in range(4):
        kube.objects[("Pod", f"c-bookie-{i}")] = {"status": {}}
    bookies = Bookies(ids(4))
    assert await driver.step(cluster(3), cluster_spec.parse(cluster(3)), kube, lambda urls: bookies, NOW) is None
    assert bookies.calls == []


def test_a_rolling_statefulset_is_told_from_its_status() -> None:
    assert driver.rolling({"spec": {"replicas": 3}, "status": {"replicas": 3, "updatedReplicas": 1,
                                                                 "currentRevision": "a", "updateRevision": "b"}})
    assert not driver.rolling({"spec": {"replicas": 3}, "status": {"replicas": 3, "updatedReplicas": 3,
                                                                     "currentRevision": "b", "updateRevision": "b"}})
