"""One step of the bookie loops for a PulsarCluster: observe, plan, act, report.

Observes the bookie StatefulSet, its pods and the bookies' admin API; runs the
autorecovery and decommission planners; carries their actions out in order; returns
the status to keep (status.autoRecovery, status.decommission), the conditions and the
events. A planner's progress is kept only when all its actions succeeded, so a step cut
short (an error, the operator killed) is simply planned again from what is observed:
every action is idempotent.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Protocol

from pulsar_operator import cluster_config, cluster_spec, conditions, errors, naming
from pulsar_operator.loops import autorecovery, bookie_admin, decommission, report
from pulsar_operator.plan import ObjectRef

logger = logging.getLogger(__name__)
#: Bookie volume claim templates (cluster_components.bookie_objects).
BOOKIE_CLAIMS = ("journal", "ledgers")


class Objects(Protocol):
    async def get(self, ref: ObjectRef) -> dict[str, Any] | None: ...
    async def patch(self, ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]: ...
    async def delete(self, ref: ObjectRef) -> bool: ...


@dataclasses.dataclass
class Result:
    status: dict[str, Any] = dataclasses.field(default_factory=dict)
    conditions: list[conditions.Condition] = dataclasses.field(default_factory=list)
    events: list[report.Event] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class BookiePod:
    ordinal: int
    bookie_id: str
    http_url: str
    exists: bool
    ready: bool


def _sts_name(spec: cluster_spec.ClusterSpec) -> str:
    return naming.child_name(spec.name, naming.BOOKIE)


def bookie_address(spec: cluster_spec.ClusterSpec, ordinal: int) -> tuple[str, str]:
    """(bookie id, HTTP admin URL) of one bookie pod, as the pod advertises them."""
    name = _sts_name(spec)
    host = f"{name}-{ordinal}.{name}.{spec.namespace}.svc"
    config = spec.bookkeeper.component.config
    port = config.get("bookiePort", str(cluster_config.BOOKIE_PORT))
    http = config.get("httpServerPort", str(cluster_config.BOOKIE_HTTP_PORT))
    return f"{host}:{port}", f"http://{host}:{http}"


def ensemble(spec: cluster_spec.ClusterSpec, current: int) -> tuple[int, int]:
    """(E, WQ) of the ledgers written so far: the overrides, else the default for `current` bookies."""
    default = min(2, current)
    config = spec.broker.config
    return (int(config.get(cluster_spec.ENSEMBLE, default)), int(config.get(cluster_spec.WRITE_QUORUM, default)))


def pod_ready(pod: dict[str, Any] | None) -> bool:
    conds = ((pod or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def rolling(sts: dict[str, Any]) -> bool:
    """The StatefulSet is replacing pods for a new template."""
    status = sts.get("status") or {}
    replicas = int((sts.get("spec") or {}).get("replicas") or 0)
    updated = status.get("updatedReplicas")
    current, update = status.get("currentRevision"), status.get("updateRevision")
    return bool((current and update and current != update)
                or (updated is not None and int(updated) < min(replicas, int(status.get("replicas") or 0))))


async def _pods(client: Objects, spec: cluster_spec.ClusterSpec, count: int) -> list[BookiePod]:
    result = []
    for ordinal in range(count):
        pod = await client.get(ObjectRef("v1", "Pod", spec.namespace, f"{_sts_name(spec)}-{ordinal}"))
        bookie_id, url = bookie_address(spec, ordinal)
        result.append(BookiePod(ordinal, bookie_id, url, pod is not None, pod_ready(pod)))
    return result


def _millis(value: Any, default: int) -> int:
    try:
        return int(value) * 1000
    except (TypeError, ValueError):
        return default


class Observation:
    """What one step reads from the bookies, read once and shared by both planners."""

    def __init__(self, pods: list[BookiePod], admin: bookie_admin.BookieAdmin) -> None:
        self.pods = pods
        self.admin = admin
        self.writable: set[str] = set()
        self.read_only: set[str] = set()
        self.states: dict[str, dict[str, Any]] = {}
        self.ledgers: dict[str, int | None] = {}
        self.under_replicated: int | None = None

    async def read(self, watched: set[int]) -> None:
        """Registrations, each registered bookie's state, the under-replicated count, and the
        ledgers on the bookies `watched` (being decommissioned) or not registered."""
        registered = await self.admin.registered()
        if registered is not None:
            self.writable, self.read_only = registered
        for pod in self.pods:
            if self.registered(pod.bookie_id):
                state = await self.admin.state(pod.http_url)
                if state is not None:
                    self.states[pod.bookie_id] = state
            if pod.ordinal in watched or (registered is not None and not self.registered(pod.bookie_id)):
                self.ledgers[pod.bookie_id] = await self.admin.ledgers_on(pod.bookie_id)
        self.under_replicated = await self.admin.under_replicated()

    def registered(self, bookie_id: str) -> bool:
        return bookie_id in self.writable or bookie_id in self.read_only

    def is_read_only(self, bookie_id: str) -> bool:
        return bookie_id in self.read_only or bool(self.states.get(bookie_id, {}).get("readOnly"))

    def disk_usage(self, bookie_id: str) -> float | None:
        usage = self.states.get(bookie_id, {}).get("diskUsage")
        return float(usage) if isinstance(usage, (int, float)) else None

    def ledgers_on(self, bookie_id: str) -> int | None:
        return self.ledgers.get(bookie_id)


def _decommission_state(spec: cluster_spec.ClusterSpec, sts: dict[str, Any], seen: Observation,
                              old: dict[str, Any], now_ms: int) -> decommission.State:
    current = int((sts.get("spec") or {}).get("replicas") or 0)
    progress = decommission.Progress.of(old.get("decommission"))
    bookies = {
        pod.ordinal: decommission.Bookie(
            pod.ordinal, pod.bookie_id, pod.exists, seen.registered(pod.bookie_id), seen.is_read_only(pod.bookie_id),
            seen.ledgers_on(pod.bookie_id), seen.disk_usage(pod.bookie_id))
        for pod in seen.pods
    }
    e, wq = ensemble(spec, current)
    return decommission.State(
        enabled=bool(spec.decommission.get("enabled", True)), wanted=spec.bookkeeper.component.replicas,
        current=current, ensemble_size=e, write_quorum=wq, bookies=bookies,
        under_replicated=seen.under_replicated, progress=progress, now_ms=now_ms,
        drain_timeout_ms=_millis(spec.decommission.get("drainTimeoutSeconds"), 3_600_000),
        release_volumes=spec.claims_when_scaled == "Delete",
    )


async def _run_decommission(spec: cluster_spec.ClusterSpec, client: Objects, seen: Observation,
                            outcome: decommission.Outcome) -> None:
    sts_ref = ObjectRef("apps/v1", "StatefulSet", spec.namespace, _sts_name(spec))
    urls = {pod.ordinal: pod.http_url for pod in seen.pods}
    for action in outcome.actions:
        if isinstance(action, decommission.SetReadOnly):
            await seen.admin.set_read_only(urls.get(action.ordinal) or bookie_address(spec, action.ordinal)[1],
                                           action.read_only)
        elif isinstance(action, decommission.StartDrain):
            await seen.admin.decommission(action.bookie_id)
        elif isinstance(action, decommission.ScaleDown):
            await client.patch(sts_ref, {"spec": {"replicas": action.replicas}})
        elif isinstance(action, decommission.ForgetBookie):
            await seen.admin.forget(action.bookie_id or bookie_address(spec, action.ordinal)[0])
        elif isinstance(action, decommission.ReleaseVolumes):
            for claim in BOOKIE_CLAIMS:
                await client.delete(ObjectRef("v1", "PersistentVolumeClaim", spec.namespace,
                                              f"{claim}-{_sts_name(spec)}-{action.ordinal}"))


async def _run_autorecovery(seen: Observation, outcome: autorecovery.Outcome) -> None:
    for action in outcome.actions:
        if isinstance(action, autorecovery.SetRecoveryDelay):
            await seen.admin.set_recovery_delay(action.seconds)
        elif isinstance(action, autorecovery.ForgetBookie):
            await seen.admin.forget(action.bookie_id)


def _counters(old: dict[str, Any], outcome: decommission.Outcome) -> dict[str, Any]:
    before = old.get("decommission") if isinstance(old.get("decommission"), dict) else {}
    done = int((before or {}).get("bookiesDecommissioned") or 0) + outcome.completed
    progress = outcome.progress.to_status() if outcome.progress else {"ordinal": None, "phase": None,
                                                                       "startedMs": None}
    return {**progress, "bookiesDecommissioned": done, "reason": outcome.condition.reason}


async def step(body: dict[str, Any], spec: cluster_spec.ClusterSpec, client: Objects,
               admins: Callable[[list[str]], bookie_admin.BookieAdmin], now_ms: int,
               rollout: bool = False) -> Result | None:
    """One step of both bookie loops; None (nothing observed, nothing done) until the bookie
    StatefulSet exists and one of its bookies is ready to answer."""
    result = Result()
    old = body.get("status") or {}
    sts = await client.get(ObjectRef("apps/v1", "StatefulSet", spec.namespace, _sts_name(spec)))
    if sts is None:
        return None
    count = max(int((sts.get("spec") or {}).get("replicas") or 0), spec.bookkeeper.component.replicas)
    pods = await _pods(client, spec, count)
    if not any(p.ready for p in pods):
        return None
    admin = admins([p.http_url for p in pods if p.ready])
    seen = Observation(pods, admin)
    progress = decommission.Progress.of(old.get("decommission"))
    await seen.read({progress.ordinal} if progress else set())
    await _autorecovery_step(spec, sts, seen, old, now_ms, result, rollout)
    await _decommission_step(spec, client, sts, seen, old, now_ms, result)
    return result


async def _autorecovery_step(spec: cluster_spec.ClusterSpec, sts: dict[str, Any], seen: Observation,
                             old: dict[str, Any], now_ms: int, result: Result, rollout: bool) -> None:
    replicas = int((sts.get("spec") or {}).get("replicas") or 0)
    delay = await seen.admin.recovery_delay()
    state = autorecovery.State(
        enabled=bool(spec.auto_recovery.get("enabled", True)),
        delay_s=int(spec.auto_recovery.get("lostBookieRecoveryDelaySeconds", 60)),
        rolling=rollout or rolling(sts),
        bookies=[autorecovery.Bookie(p.ordinal, p.bookie_id, p.exists, p.ready, seen.registered(p.bookie_id),
                                     seen.ledgers_on(p.bookie_id)) for p in seen.pods if p.ordinal < replicas],
        under_replicated=seen.under_replicated, current_delay_s=delay,
        progress=autorecovery.Progress.of(old.get("autoRecovery")), now_ms=now_ms)
    outcome = autorecovery.plan(state)
    progress = state.progress
    condition, applied = outcome.condition, delay
    try:
        await _run_autorecovery(seen, outcome)
        progress = outcome.progress
        result.events += outcome.events
        applied = next((a.seconds for a in outcome.actions if isinstance(a, autorecovery.SetRecoveryDelay)), delay)
    except errors.OperatorError as exc:
        logger.warning("autorecovery step failed, planned again next time: %s", exc)
        condition = conditions.Condition(autorecovery.CONDITION, False, "Retrying", str(exc)[:300])
    result.status["autoRecovery"] = progress.to_status(seen.under_replicated, applied)
    result.conditions.append(condition)


async def _decommission_step(spec: cluster_spec.ClusterSpec, client: Objects, sts: dict[str, Any],
                             seen: Observation, old: dict[str, Any], now_ms: int, result: Result) -> None:
    state = _decommission_state(spec, sts, seen, old, now_ms)
    outcome = decommission.plan(state)
    try:
        await _run_decommission(spec, client, seen, outcome)
    except errors.OperatorError as exc:
        logger.warning("decommission step failed, planned again next time: %s", exc)
        result.status["decommission"] = old.get("decommission")
        result.conditions.append(conditions.Condition(decommission.CONDITION, True, "Retrying", str(exc)[:300]))
        return
    result.events += outcome.events
    result.status["decommission"] = _counters(old, outcome)
    result.conditions.append(outcome.condition)
