"""The loops' step after a PulsarCluster reconcile: merge their status, conditions and events.

Called by the cluster handlers (timer and change handlers alike) with the status the
reconcile produced; adds status.autoRecovery, status.decommission and the loops'
conditions, and posts every decision as an Event through `post_event` (kopf's event
API in the operator). A condition whose reason changes is an Event too, so a refusal or a
wait is announced once, not at every step.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from pulsar_common import errors as common_errors

from pulsar_operator import (
    admin,
    cluster_config,
    cluster_reconcile,
    cluster_spec,
    conditions,
    diffing,
    errors,
    kube,
    naming,
)
from pulsar_operator.loops import (
    autorecovery,
    bookie_admin,
    decommission,
    driver,
    etcd_admin,
    etcd_membership,
    rebalance,
    report,
)
from pulsar_operator.plan import ObjectRef

PostEvent = Callable[[report.Event], None]
AdminFactory = Callable[[list[str]], bookie_admin.HttpBookieAdmin]
logger = logging.getLogger(__name__)
#: Longest one step of the loops may take (the bookies' or brokers' APIs answering slowly): a step
#: cut short is planned again next time, and the handler (which holds up deletion) returns.
LOOP_STEP_TIMEOUT_S = 20.0
#: The condition types the loops own (kept as they were when a step observes nothing).
CONDITIONS = (autorecovery.CONDITION, decommission.CONDITION, rebalance.CONDITION, etcd_membership.CONDITION)
#: The most etcd members a PulsarCluster can have (the CRD's maximum).
ETCD_MEMBERS_MAX = 7


def _announcements(old: list[dict[str, Any]], new: list[conditions.Condition]) -> list[report.Event]:
    before = {c.get("type"): c for c in old if isinstance(c, dict)}
    result = []
    for cond in new:
        previous = before.get(cond.type) or {}
        if previous.get("reason") != cond.reason:
            kind = report.WARNING if cond.reason in ("Refused", "DrainTimedOut", "Retrying") else report.NORMAL
            result.append(report.Event(kind, f"{cond.type}{cond.reason}", cond.message or cond.reason))
    return result


async def pause_before_rollout(body: dict[str, Any], client: driver.Objects,
                               admins: AdminFactory = bookie_admin.HttpBookieAdmin) -> bool:
    """Called before a reconcile applies its objects: when it is about to change the bookie pod
    template (a rolling restart), raise lostBookieRecoveryDelay first, so the first pod restarted
    is not taken for lost. True when a rollout is about to start (the autorecovery step then
    treats the StatefulSet as rolling until its status says so)."""
    if cluster_spec.validate(body) or _deleting(body):
        return False
    spec = cluster_spec.parse(body)
    ref = ObjectRef("apps/v1", "StatefulSet", spec.namespace, naming.child_name(spec.name, naming.BOOKIE))
    live = await client.get(ref)
    if live is None or not bool(spec.auto_recovery.get("enabled", True)):
        return False
    replicas = int((live.get("spec") or {}).get("replicas") or 0)
    desired = next(o for o in cluster_reconcile.desired_objects(body, spec, replicas)
                   if o["kind"] == "StatefulSet" and o["metadata"]["name"] == ref.name)
    template = {"kind": "PodTemplateSpec", **desired["spec"]["template"]}
    if diffing.merge_patch(template, (live.get("spec") or {}).get("template") or {}) is None:
        return False
    urls = [driver.bookie_address(spec, i)[1] for i in range(replicas)]
    admin = admins(urls)
    try:
        async with asyncio.timeout(LOOP_STEP_TIMEOUT_S):
            # Only when it differs: writing the value the bookies already have acts as
            # BookKeeper's trigger_audit, which would recover the bookies about to restart.
            if await admin.recovery_delay() != autorecovery.ROLLING_PAUSE_DELAY_S:
                await admin.set_recovery_delay(autorecovery.ROLLING_PAUSE_DELAY_S)
    except (errors.OperatorError, TimeoutError) as exc:
        logger.warning("could not pause recovery before the bookies roll: %s", exc)
    finally:
        await admin.close()
    return True


async def _etcd_state(spec: cluster_spec.ClusterSpec, client: driver.Objects, sts: dict[str, Any],
                      members: list[etcd_membership.Member] | None) -> etcd_membership.State:
    name = naming.child_name(spec.name, naming.ETCD)
    ready, pods, volumes, names = {}, set(), set(), {}
    for i in range(ETCD_MEMBERS_MAX):
        names[i] = (f"{name}-{i}", f"http://{name}-{i}.{name}-headless.{spec.namespace}.svc:{cluster_config.ETCD_PEER_PORT}")
        pod = await client.get(ObjectRef("v1", "Pod", spec.namespace, f"{name}-{i}"))
        if pod is not None:
            pods.add(i)
            ready[i] = driver.pod_ready(pod)
        if await client.get(ObjectRef("v1", "PersistentVolumeClaim", spec.namespace, f"data-{name}-{i}")):
            volumes.add(i)
    return etcd_membership.State(spec.etcd.replicas, int((sts.get("spec") or {}).get("replicas") or 0), ready,
                                 frozenset(pods), frozenset(volumes), members, names)


def _with_initial_cluster(sts: dict[str, Any], initial: str) -> list[dict[str, Any]]:
    """The etcd StatefulSet's containers with the initial cluster a new member starts with."""
    containers = [dict(c) for c in (((sts.get("spec") or {}).get("template") or {}).get("spec") or {})
                  .get("containers") or []]
    command = list(containers[0].get("command") or [])
    for flag, value in (("--initial-cluster", initial), ("--initial-cluster-state", "existing")):
        if flag in command:
            command[command.index(flag) + 1] = value
    containers[0]["command"] = command
    return containers


async def _etcd(spec: cluster_spec.ClusterSpec, client: driver.Objects, result: driver.Result) -> None:
    """One step of the etcd membership loop (managed etcd only)."""
    ref = ObjectRef("apps/v1", "StatefulSet", spec.namespace, naming.child_name(spec.name, naming.ETCD))
    sts = await client.get(ref) if spec.etcd.managed else None
    if sts is None:
        return
    admin = etcd_admin.EtcdAdmin(f"http://{cluster_config.svc_host(spec, naming.ETCD)}:{cluster_config.ETCD_CLIENT_PORT}")
    try:
        outcome = etcd_membership.plan(await _etcd_state(spec, client, sts, await admin.members()))
        for action in outcome.actions:
            if isinstance(action, etcd_membership.AddLearner):
                await admin.add_learner(action.peer_url)
            elif isinstance(action, etcd_membership.Promote):
                await admin.promote(action.member_id)
            elif isinstance(action, etcd_membership.RemoveMember):
                await admin.remove(action.member_id)
            elif isinstance(action, etcd_membership.ScaleTo):
                await client.patch(ref, {"spec": {"replicas": action.replicas, "template": {"spec": {
                    "containers": _with_initial_cluster(sts, action.initial_cluster)}}}})
            elif isinstance(action, etcd_membership.ReleaseVolume):
                await client.delete(ObjectRef("v1", "PersistentVolumeClaim", spec.namespace,
                                              f"data-{ref.name}-{action.ordinal}"))
    except errors.OperatorError as exc:
        logger.warning("etcd membership step failed, planned again next time: %s", exc)
        result.conditions.append(conditions.Condition(etcd_membership.CONDITION, True, "Retrying", str(exc)[:300]))
        return
    finally:
        await admin.close()
    result.conditions.append(outcome.condition)
    result.events.extend(outcome.events)


def _deleting(body: dict[str, Any]) -> bool:
    """The cluster is being deleted: the loops leave it alone (their steps would only slow it down)."""
    return bool((body.get("metadata") or {}).get("deletionTimestamp"))


async def ready_brokers(spec: cluster_spec.ClusterSpec, client: driver.Objects) -> list[str]:
    """Broker ids (`<pod>.<headless service>:<webServicePort>`, as they register) of the ready broker pods."""
    name = naming.child_name(spec.name, naming.BROKER)
    port = spec.broker.config.get("webServicePort", str(cluster_config.WEB_PORT))
    found = []
    for ordinal in range(spec.broker.replicas):
        pod = await client.get(ObjectRef("v1", "Pod", spec.namespace, f"{name}-{ordinal}"))
        if driver.pod_ready(pod):
            found.append(f"{name}-{ordinal}.{name}-headless.{spec.namespace}.svc:{port}")
    return found


async def _rebalance(spec: cluster_spec.ClusterSpec, client: kube.KubeClient, memory: rebalance.Memory,
                     old: dict[str, Any], result: driver.Result) -> None:
    if not rebalance.operator_balances(spec.broker.config):
        result.conditions.append(conditions.Condition(
            rebalance.CONDITION, False, "BrokersBalance",
            "spec.broker.config sets loadBalancerEnabled: the brokers' leader runs the load balancer"))
        return
    try:
        conf = rebalance.broker_settings(cluster_config.broker_conf(spec))
    except (common_errors.ConfigError, ValueError) as exc:
        result.conditions.append(conditions.Condition(rebalance.CONDITION, False, "InvalidSettings", str(exc)[:300]))
        return
    try:
        credentials = await admin.credentials_for(spec, client)
    except errors.OperatorError as exc:
        result.conditions.append(conditions.Condition(rebalance.CONDITION, False, "Retrying", str(exc)[:300]))
        return
    brokers = rebalance.HttpBrokers(credentials.headers())
    try:
        outcome = await rebalance.step(brokers, await ready_brokers(spec, client), conf, memory,
                                       old.get("rebalance") or {}, int(time.time() * 1000))
    except errors.OperatorError as exc:
        logger.warning("rebalancing round failed, planned again next time: %s", exc)
        result.conditions.append(conditions.Condition(rebalance.CONDITION, False, "Retrying", str(exc)[:300]))
        return
    finally:
        await brokers.close()
    if outcome is None:
        return
    result.status["rebalance"] = outcome.status
    result.conditions.append(outcome.condition)
    result.events.extend(outcome.events)


async def run(body: dict[str, Any], status: dict[str, Any], client: kube.KubeClient, post_event: PostEvent,
              now: str, admins: AdminFactory = bookie_admin.HttpBookieAdmin,
              balancing: rebalance.Memory | None = None, rollout: bool = False) -> dict[str, Any]:
    """`status` with the loops' part added (unchanged when the spec is invalid). `balancing` is
    this cluster's rebalancing memory (None: no rebalancing step); `rollout` says this reconcile
    started a rolling restart of the bookies (see pause_before_rollout)."""
    if cluster_spec.validate(body) or _deleting(body):
        return status
    spec = cluster_spec.parse(body)
    opened: list[bookie_admin.HttpBookieAdmin] = []

    def factory(urls: list[str]) -> bookie_admin.HttpBookieAdmin:
        opened.append(admins(urls))
        return opened[-1]

    try:
        async with asyncio.timeout(LOOP_STEP_TIMEOUT_S):
            result = (await driver.step(body, spec, client, factory, int(time.time() * 1000), rollout=rollout)
                      or driver.Result())
            if balancing is not None:
                await _rebalance(spec, client, balancing, body.get("status") or {}, result)
            await _etcd(spec, client, result)
    except (errors.OperatorError, TimeoutError) as exc:
        logger.warning("controller loops skipped this time: %r", exc)
        result = driver.Result()
    finally:
        for admin in opened:
            await admin.close()
    old_conditions = list((body.get("status") or {}).get("conditions") or [])
    # A loop that observed nothing this time keeps its condition as it was.
    stepped = {c.type for c in result.conditions}
    kept = [c for c in old_conditions if c.get("type") in CONDITIONS and c.get("type") not in stepped]
    generation = (body.get("metadata") or {}).get("generation")
    merged = conditions.merge(old_conditions, result.conditions, now, generation)
    events = result.events + _announcements(old_conditions, result.conditions)
    for event in events:
        post_event(event)
    return {**status, **result.status,
            "conditions": [c for c in status.get("conditions") or [] if c.get("type") not in CONDITIONS]
            + kept + merged}
