"""PulsarCluster -> Plan: the children it should have, its status, first-time admin calls.

Pure: takes the custom resource, what was observed of its StatefulSets and
the time, and decides. The bookie scale-down hold lives here: a lower
spec.bookkeeper.replicas never shrinks the bookie StatefulSet (that would
lose ledger replicas); the decommission loop (loops/decommission.py) drains
bookies and shrinks it one at a time, and this reconcile then holds it at its
new size. With spec.decommission.enabled false it stays held, Degraded.

spec.functionsWorker.enabled adds `pulsar functions-worker` pods over the
cluster's metadata store, where the brokers find them to forward
/admin/v3/functions; Ready then waits for them too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulsar_operator import cluster_components as components
from pulsar_operator import cluster_config, cluster_spec, conditions, naming, plan

COMPONENT_STATUS_KEYS = {
    naming.ETCD: "etcd",
    naming.BOOKIE: "bookkeeper",
    naming.BROKER: "broker",
    naming.PROXY: "proxy",
    naming.FUNCTIONS_WORKER: "functionsWorker",
}
HELD_REASON = "DecommissionDisabled"
DECOMMISSIONING_REASON = "DecommissioningBookies"


@dataclasses.dataclass(frozen=True)
class ObservedSet:
    """What the API server says about one StatefulSet."""

    spec_replicas: int | None
    replicas: int
    ready_replicas: int
    #: The first container's command line (the etcd loop keeps its --initial-cluster values there).
    command: tuple[str, ...] = ()

    @staticmethod
    def of(sts: dict[str, Any] | None) -> ObservedSet | None:
        if sts is None:
            return None
        status = sts.get("status") or {}
        containers = (((sts.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or [{}]
        return ObservedSet(
            spec_replicas=(sts.get("spec") or {}).get("replicas"),
            replicas=int(status.get("replicas") or 0),
            ready_replicas=int(status.get("readyReplicas") or 0),
            command=tuple(str(a) for a in containers[0].get("command") or ()),
        )


def desired_replicas(spec: cluster_spec.ClusterSpec) -> dict[str, int]:
    """Replicas per enabled component, as the spec asks (before any hold)."""
    result: dict[str, int] = {}
    if spec.etcd.managed:
        result[naming.ETCD] = spec.etcd.replicas
    result[naming.BOOKIE] = spec.bookkeeper.component.replicas
    result[naming.BROKER] = spec.broker.replicas
    if spec.proxy.component.enabled:
        result[naming.PROXY] = spec.proxy.component.replicas
    if spec.functions_worker.enabled:
        result[naming.FUNCTIONS_WORKER] = spec.functions_worker.replicas
    return result


def bookie_replicas(spec: cluster_spec.ClusterSpec, observed: ObservedSet | None) -> tuple[int, bool]:
    """(replicas to apply, held?): never below what the StatefulSet already has."""
    wanted = spec.bookkeeper.component.replicas
    current = observed.spec_replicas if observed else None
    if current is not None and wanted < current:
        return current, True
    return wanted, False


#: Rendered into broker.conf unless spec.broker.config sets it: the operator's rebalancing loop
#: (loops/rebalance.py) runs the load balancer, so the brokers' leader must not.
LOAD_BALANCER_KEY = "loadBalancerEnabled"


def with_operator_balancing(spec: cluster_spec.ClusterSpec) -> cluster_spec.ClusterSpec:
    """spec with loadBalancerEnabled=false among the broker settings, unless the spec sets it."""
    if LOAD_BALANCER_KEY in spec.broker.config:
        return spec
    broker = dataclasses.replace(spec.broker, config={LOAD_BALANCER_KEY: "false", **spec.broker.config})
    return dataclasses.replace(spec, broker=broker)


ETCD_FLAGS = ("--initial-cluster", "--initial-cluster-state")


def held_etcd(spec: cluster_spec.ClusterSpec, observed: ObservedSet | None) -> cluster_spec.ClusterSpec | None:
    """spec with the etcd replicas of the running StatefulSet, when the spec asks for another
    count: the etcd membership loop (loops/etcd_membership.py) changes members and pods one at
    a time. None when nothing is held."""
    current = observed.spec_replicas if observed else None
    if not spec.etcd.managed or current is None or current == spec.etcd.replicas:
        return None
    return dataclasses.replace(spec, etcd=dataclasses.replace(spec.etcd, replicas=current))


def etcd_membership_owned(objects: list[dict[str, Any]], spec: cluster_spec.ClusterSpec,
                          observed: ObservedSet | None) -> None:
    """The etcd StatefulSet updates its pods only when they are deleted (OnDelete: a member's
    flags matter at its first start only, and restarting members for them would risk quorum),
    and keeps the --initial-cluster values the membership loop gave it."""
    name = naming.child_name(spec.name, naming.ETCD)
    sts = next((o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == name), None)
    if sts is None:
        return
    sts["spec"]["updateStrategy"] = {"type": "OnDelete"}
    live = list(observed.command) if observed else []
    command = sts["spec"]["template"]["spec"]["containers"][0]["command"]
    for flag in ETCD_FLAGS:
        if flag in live and flag in command and live.index(flag) + 1 < len(live):
            command[command.index(flag) + 1] = live[live.index(flag) + 1]


def desired_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec, bookies: int) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    if spec.etcd.managed:
        objects += components.etcd_objects(body, spec)
    objects += components.bookie_objects(body, spec, bookies)
    objects += components.broker_objects(body, with_operator_balancing(spec))
    if spec.proxy.component.enabled:
        objects += components.proxy_objects(body, spec)
    if spec.functions_worker.enabled:
        objects += components.functions_worker_objects(body, spec)
    objects.append(components.service_urls_config_map(body, spec))
    return objects


def all_child_refs(spec: cluster_spec.ClusterSpec) -> list[plan.ObjectRef]:
    """Every child a cluster can have, whatever is enabled; used to remove disabled parts."""
    refs = []
    for component in (naming.ETCD, naming.PROXY, naming.FUNCTIONS_WORKER):
        name = naming.child_name(spec.name, component)
        refs += [
            plan.ObjectRef("v1", "Service", spec.namespace, name),
            plan.ObjectRef("v1", "Service", spec.namespace, f"{name}-headless"),
            plan.ObjectRef("apps/v1", "StatefulSet", spec.namespace, name),
        ]
        if component != naming.ETCD:
            refs.append(plan.ObjectRef("v1", "ConfigMap", spec.namespace, name))
    return refs


def metadata_calls(spec: cluster_spec.ClusterSpec) -> tuple[plan.AdminCall, ...]:
    """Cluster, public tenant and public/default namespace; 409 means it exists already."""
    cluster = spec.cluster_name
    return (
        plan.AdminCall("PUT", f"/admin/v2/clusters/{cluster}", {
            "serviceUrl": cluster_config.web_service_url(spec),
            "brokerServiceUrl": f"pulsar://{cluster_config.svc_host(spec, naming.BROKER)}:{cluster_config.BROKER_PORT}",
        }, ok_statuses=(409,)),
        plan.AdminCall("PUT", "/admin/v2/tenants/public",
                       {"adminRoles": [], "allowedClusters": [cluster]}, ok_statuses=(409,)),
        plan.AdminCall("PUT", "/admin/v2/namespaces/public/default", None, ok_statuses=(409,)),
    )


def component_status(
    spec: cluster_spec.ClusterSpec, observed: dict[str, ObservedSet | None], wanted: dict[str, int]
) -> dict[str, Any]:
    result: dict[str, Any] = {key: None for comp, key in COMPONENT_STATUS_KEYS.items() if comp not in wanted}
    for component, replicas in wanted.items():
        seen = observed.get(component)
        result[COMPONENT_STATUS_KEYS[component]] = {
            "replicas": seen.replicas if seen else 0,
            "readyReplicas": seen.ready_replicas if seen else 0,
            "desiredReplicas": replicas,
            "selector": naming.selector_string(naming.selector_labels(spec.name, component)),
        }
    return result


def _conditions(
    wanted: dict[str, int], observed: dict[str, ObservedSet | None], held: bool, bookies: int,
    spec: cluster_spec.ClusterSpec,
) -> list[conditions.Condition]:
    spec_bookies = spec.bookkeeper.component.replicas
    waiting = [
        f"{component} {seen.ready_replicas if seen else 0}/{replicas} ready"
        for component, replicas in wanted.items()
        for seen in [observed.get(component)]
        if seen is None or seen.ready_replicas < replicas
    ]
    result = []
    if waiting:
        message = ", ".join(waiting)
        result += [conditions.Condition(conditions.READY, False, "ComponentsNotReady", message),
                   conditions.Condition(conditions.PROGRESSING, True, "ComponentsNotReady", message)]
    else:
        result += [conditions.Condition(conditions.READY, True, "AllComponentsReady", "every component is ready"),
                   conditions.Condition(conditions.PROGRESSING, False, "AllComponentsReady", "")]
    decommissioning = held and bool(spec.decommission.get("enabled", True))
    if decommissioning:
        message = (f"spec.bookkeeper.replicas={spec_bookies}, {bookies} bookies running: decommissioning one at "
                   "a time (see the BookieDecommission condition)")
        result = [c for c in result if c.type != conditions.PROGRESSING]
        result.append(conditions.Condition(conditions.PROGRESSING, True, DECOMMISSIONING_REASON, message))
        result.append(conditions.Condition(conditions.DEGRADED, False, DECOMMISSIONING_REASON, message))
    elif held:
        result.append(conditions.Condition(
            conditions.DEGRADED, True, HELD_REASON,
            f"spec.bookkeeper.replicas={spec_bookies} is below the {bookies} bookies running; the scale-down is "
            "held (the StatefulSet keeps its size) because spec.decommission.enabled is false",
        ))
    else:
        result.append(conditions.Condition(conditions.DEGRADED, False, "AsExpected", ""))
    return result


def reconcile(body: dict[str, Any], observed: dict[str, ObservedSet | None], now: str) -> plan.Plan:
    """The whole decision for one PulsarCluster."""
    meta = body.get("metadata") or {}
    old_status = body.get("status") or {}
    generation = meta.get("generation")
    problems = cluster_spec.validate(body)
    if problems:
        invalid = {"observedGeneration": generation,
                   "conditions": conditions.merge(old_status.get("conditions"), conditions.invalid_spec(problems),
                                                  now, generation)}
        return plan.Plan(status=invalid)
    spec = cluster_spec.parse(body)
    etcd_held = held_etcd(spec, observed.get(naming.ETCD))
    applied = etcd_held or spec
    bookies, held = bookie_replicas(spec, observed.get(naming.BOOKIE))
    wanted = desired_replicas(applied)
    wanted[naming.BOOKIE] = bookies
    objects = desired_objects(body, applied, bookies)
    etcd_membership_owned(objects, spec, observed.get(naming.ETCD))
    present = {plan.ObjectRef.of(obj) for obj in objects}
    deletions = tuple(ref for ref in all_child_refs(spec) if ref not in present)
    conds = _conditions(wanted, observed, held, bookies, spec)
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "conditions": conditions.merge(old_status.get("conditions"), conds, now, generation),
        "components": component_status(spec, observed, wanted),
        "brokerServiceURL": cluster_config.broker_service_url(spec),
        "webServiceURL": cluster_config.web_service_url(spec),
        "clusterName": spec.cluster_name,
        "metadataInitialized": bool(old_status.get("metadataInitialized")),
        "heldBookieReplicas": bookies if held else None,
    }
    broker = observed.get(naming.BROKER)
    calls: tuple[plan.AdminCall, ...] = ()
    if not status["metadataInitialized"] and broker is not None and broker.ready_replicas > 0:
        calls = metadata_calls(spec)
    return plan.Plan(objects=tuple(objects), deletions=deletions, admin_calls=calls, status=status)
