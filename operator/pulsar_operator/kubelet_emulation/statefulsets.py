"""The StatefulSet controller: pods `<sts>-<ordinal>`, their claims, rolling updates, status.

`plan` is the decision, pure and table-tested: which ordinals to create and
which pods to delete, following Kubernetes' stateful_set_control.go —
OrderedReady creates one pod at a time in order and waits for each to be
Running and Ready, scales down from the highest ordinal one at a time, and
waits while any pod is unhealthy; Parallel creates and deletes all at once;
RollingUpdate replaces pods from the highest ordinal down to `partition`,
one at a time, deleting an outdated pod and waiting for its replacement to
be ready. A pod's revision is a hash of the pod template (the
controller-revision-hash label); there are no ControllerRevision objects,
so a new pod always gets the newest template, partition or not.

Claims follow `persistentVolumeClaimRetentionPolicy`: with whenDeleted
Delete they carry an ownerReference to the StatefulSet (the garbage
collector removes them with it), with whenScaled Delete the claims of
ordinals scaled away are deleted once their pod is gone. Retain (the
default for both) keeps them.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Callable
from typing import Any

from pulsar_operator.kubelet_emulation import api, network

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


@dataclasses.dataclass(frozen=True)
class PodView:
    """What the controller needs to know of one pod (or of a pod still terminating)."""

    revision: str
    ready: bool
    terminating: bool = False
    failed: bool = False


@dataclasses.dataclass(frozen=True)
class Decision:
    create: tuple[int, ...] = ()
    delete: tuple[int, ...] = ()


def plan(replicas: int, parallel: bool, rolling: bool, partition: int, update_revision: str,
         pods: dict[int, PodView]) -> Decision:
    """Which ordinals to create and which pods to delete now (the rest waits for the next sync)."""
    create: list[int] = []
    for ordinal in range(replicas):
        pod = pods.get(ordinal)
        if pod is None:
            create.append(ordinal)
            if not parallel:
                return Decision(tuple(create))
        elif pod.failed and not pod.terminating:
            return Decision(tuple(create), (ordinal,))
        elif not parallel and (pod.terminating or not pod.ready):
            return Decision(tuple(create))
    condemned = sorted((o for o in pods if o >= replicas), reverse=True)
    if condemned:
        if parallel:
            return Decision(tuple(create), tuple(o for o in condemned if not pods[o].terminating))
        if any(pods[o].terminating for o in condemned) or any(
                not pods[o].ready for o in pods if o < replicas):
            return Decision(tuple(create))
        return Decision(tuple(create), (condemned[0],))
    if create or not rolling:
        return Decision(tuple(create))
    for ordinal in range(replicas - 1, max(partition, 0) - 1, -1):
        pod = pods[ordinal]
        if pod.revision != update_revision and not pod.terminating:
            return Decision(delete=(ordinal,))
        if pod.terminating or not pod.ready:
            return Decision()
    return Decision()


def revision(sts: dict[str, Any]) -> str:
    template = (sts.get("spec") or {}).get("template") or {}
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
    return f"{sts['metadata']['name']}-{digest}"


def ordinal_of(sts_name: str, pod_name: str) -> int | None:
    prefix, _, suffix = pod_name.rpartition("-")
    return int(suffix) if prefix == sts_name and suffix.isdigit() else None


def claim_name(template: dict[str, Any], sts_name: str, ordinal: int) -> str:
    return f"{template['metadata']['name']}-{sts_name}-{ordinal}"


def owner_reference(sts: dict[str, Any]) -> dict[str, Any]:
    meta = sts["metadata"]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": meta["name"], "uid": meta.get("uid", ""),
            "controller": True, "blockOwnerDeletion": True}


def pod_body(sts: dict[str, Any], ordinal: int, rev: str) -> dict[str, Any]:
    meta, spec = sts["metadata"], sts["spec"]
    template = copy.deepcopy(spec.get("template") or {})
    name = f"{meta['name']}-{ordinal}"
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.update({REVISION_LABEL: rev, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
    pod_spec = template.get("spec") or {}
    pod_spec.update(hostname=name, subdomain=spec.get("serviceName"))
    claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates") or []]
    pod_spec["volumes"] = [v for v in pod_spec.get("volumes") or [] if v.get("name") not in claims] + [
        {"name": c, "persistentVolumeClaim": {"claimName": f"{c}-{meta['name']}-{ordinal}"}} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "spec": pod_spec, "metadata": {
        "name": name, "namespace": meta.get("namespace"), "labels": labels,
        "annotations": dict((template.get("metadata") or {}).get("annotations") or {}),
        "ownerReferences": [owner_reference(sts)]}}


def _retention(sts: dict[str, Any]) -> dict[str, str]:
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    return {"whenDeleted": str(policy.get("whenDeleted") or "Retain"),
            "whenScaled": str(policy.get("whenScaled") or "Retain")}


def claim_body(sts: dict[str, Any], template: dict[str, Any], ordinal: int) -> dict[str, Any]:
    meta = sts["metadata"]
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
        "name": claim_name(template, meta["name"], ordinal), "namespace": meta.get("namespace"),
        "labels": dict(((sts["spec"].get("selector") or {}).get("matchLabels")) or {})},
        "spec": copy.deepcopy(template.get("spec") or {})}
    if _retention(sts)["whenDeleted"] == "Delete":
        body["metadata"]["ownerReferences"] = [owner_reference(sts)]
    return body


class StatefulSetController:
    def __init__(self, client: api.ApiClient, sets: api.Informer, pods: api.Informer, claims: api.Informer,
                 terminating: Callable[[], set[api.Key]]) -> None:
        """`terminating()`: pods whose objects are gone but whose processes are still stopping."""
        self.api = client
        self.sets = sets
        self.pods = pods
        self.claims = claims
        self.terminating = terminating

    def _views(self, sts: dict[str, Any]) -> dict[int, PodView]:
        namespace, name, uid = sts["metadata"].get("namespace"), sts["metadata"]["name"], sts["metadata"].get("uid")
        views: dict[int, PodView] = {}
        held = self.terminating()
        for pod in self.pods.items():
            meta = pod["metadata"]
            ordinal = ordinal_of(name, meta["name"])
            owners = {ref.get("uid") for ref in meta.get("ownerReferences") or []}
            if meta.get("namespace") != namespace or ordinal is None or uid not in owners:
                continue
            views[ordinal] = PodView(
                revision=str((meta.get("labels") or {}).get(REVISION_LABEL, "")), ready=network.pod_ready(pod),
                terminating=bool(meta.get("deletionTimestamp")) or (namespace, meta["name"]) in held,
                failed=(pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"))
        for pod_namespace, pod_name in self.terminating():
            ordinal = ordinal_of(name, pod_name)
            if pod_namespace == namespace and ordinal is not None and ordinal not in views:
                views[ordinal] = PodView(revision="", ready=False, terminating=True)
        return views

    async def sync(self, sts: dict[str, Any]) -> None:
        spec = sts.get("spec") or {}
        meta = sts["metadata"]
        rev = revision(sts)
        strategy = spec.get("updateStrategy") or {}
        views = self._views(sts)
        decision = plan(int(spec.get("replicas", 1)), spec.get("podManagementPolicy") == "Parallel",
                        strategy.get("type", "RollingUpdate") == "RollingUpdate",
                        int((strategy.get("rollingUpdate") or {}).get("partition", 0)), rev, views)
        for ordinal in decision.create:
            await self._ensure_claims(sts, ordinal)
            created = await self.api.create(api.PODS, pod_body(sts, ordinal, rev))
            if created is not None:
                self.pods.upsert(created)
        for ordinal in decision.delete:
            pod = self.pods.get(meta.get("namespace"), f"{meta['name']}-{ordinal}")
            if pod is not None and await self.api.delete(api.PODS, meta.get("namespace"), pod["metadata"]["name"]):
                self.pods.remove(pod)
        await self._release_scaled_claims(sts, views)
        await self._write_status(sts, rev, self._views(sts))

    async def _ensure_claims(self, sts: dict[str, Any], ordinal: int) -> None:
        namespace = sts["metadata"].get("namespace")
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            if self.claims.get(namespace, claim_name(template, sts["metadata"]["name"], ordinal)) is not None:
                continue
            body = claim_body(sts, template, ordinal)
            created = await self.api.create(api.CLAIMS, body)
            if created is None:
                continue
            requested = ((body["spec"].get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
            bound = await self.api.patch(api.CLAIMS, namespace, body["metadata"]["name"], {"status": {
                "phase": "Bound", "accessModes": body["spec"].get("accessModes") or ["ReadWriteOnce"],
                "capacity": {"storage": requested}}}, "status")
            self.claims.upsert(bound or created)

    async def _release_scaled_claims(self, sts: dict[str, Any], views: dict[int, PodView]) -> None:
        if _retention(sts)["whenScaled"] != "Delete":
            return
        namespace, name = sts["metadata"].get("namespace"), sts["metadata"]["name"]
        replicas = int((sts.get("spec") or {}).get("replicas", 1))
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            prefix = f"{template['metadata']['name']}-{name}-"
            for claim in self.claims.items():
                claim_ns, claim_name_ = claim["metadata"].get("namespace"), claim["metadata"]["name"]
                suffix = claim_name_.removeprefix(prefix)
                if claim_ns == namespace and claim_name_.startswith(prefix) and suffix.isdigit() \
                        and int(suffix) >= replicas and int(suffix) not in views:
                    if await self.api.delete(api.CLAIMS, namespace, claim_name_):
                        self.claims.remove(claim)

    async def _write_status(self, sts: dict[str, Any], rev: str, views: dict[int, PodView]) -> None:
        old = sts.get("status") or {}
        live = [v for v in views.values() if v.revision]
        updated = sum(v.revision == rev for v in live)
        replicas = int((sts.get("spec") or {}).get("replicas", 1))
        current_rev = rev if updated == len(live) == replicas else str(old.get("currentRevision") or rev)
        status = {
            "observedGeneration": sts["metadata"].get("generation"), "replicas": len(live),
            "readyReplicas": sum(v.ready for v in live), "availableReplicas": sum(v.ready for v in live),
            "currentReplicas": sum(v.revision == current_rev for v in live), "updatedReplicas": updated,
            "currentRevision": current_rev, "updateRevision": rev, "collisionCount": 0,
        }
        if any(old.get(k) != v for k, v in status.items()):
            patched = await self.api.patch(api.STATEFUL_SETS, sts["metadata"].get("namespace"),
                                           sts["metadata"]["name"], {"status": status}, "status")
            if patched is not None:
                self.sets.upsert(patched)
