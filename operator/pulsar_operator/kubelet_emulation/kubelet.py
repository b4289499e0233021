"""The kubelet of the harness's one node: a PodRunner per pod object, status back to the API.

Every pod is scheduled here at once. A pod object that appears gets a new
address and a runner; a pod that disappears (or is replaced by a new object
of the same name) is terminated gracefully, and its name counts as taken
until its processes are gone: the StatefulSet controller waits for that
before it creates the replacement, like a real one waits for a terminating
pod. Claim directories whose PersistentVolumeClaim is gone are removed.
"""

from __future__ import annotations

import asyncio
import logging
import pathlib
from typing import Any

from pulsar_operator.kubelet_emulation import api, containers, network, pods, volumes

log = logging.getLogger(__name__)


class Kubelet:
    def __init__(self, client: api.ApiClient, pod_cache: api.Informer, claim_cache: api.Informer,
                 node: containers.Node, state_dir: pathlib.Path, addresses: network.AddressPool) -> None:
        self.api = client
        self.pod_cache = pod_cache
        self.claim_cache = claim_cache
        self.node = node
        self.state_dir = state_dir
        self.addresses = addresses
        self.claims = volumes.ClaimStore(state_dir / "volumes")
        self.runners: dict[api.Key, pods.PodRunner] = {}
        self.stopping: dict[api.Key, asyncio.Task[None]] = {}
        self.live: set[pods.PodRunner] = set()  # started and not yet stopped, terminating ones included
        self._reported: dict[api.Key, dict[str, Any]] = {}

    def terminating(self) -> set[api.Key]:
        return set(self.stopping)

    def reap(self) -> None:
        """Stop the runners whose pod objects are gone, replaced or being deleted. Runs before
        the StatefulSet controller looks, so that a replacement waits for the old processes."""
        for key, runner in list(self.runners.items()):
            meta = (self.pod_cache.get(*key) or {}).get("metadata") or {}
            if not meta or meta.get("deletionTimestamp") or meta.get("uid") != runner.uid:
                self._stop(key)

    async def sync(self) -> None:
        """Start a runner for every new pod, report every pod's status, refresh volumes."""
        self.reap()
        for key, pod in list(self.pod_cache.objects.items()):
            runner = self.runners.get(key)
            if runner is None:
                if key in self.stopping or pod["metadata"].get("deletionTimestamp"):
                    continue
                runner = self.runners[key] = pods.PodRunner(pod, self.addresses.allocate(), self.state_dir,
                                                            self.claims, self.node)
                log.info("starting pod %s/%s on %s", key[0], key[1], runner.ip)
                self.live.add(runner)
                runner.start()
            runner.refresh()
            await self._report(key, runner)
        self._release_claims()

    async def _report(self, key: api.Key, runner: pods.PodRunner) -> None:
        status = runner.status()
        if self._reported.get(key) == status:
            return
        patched = await self.api.patch(api.PODS, key[0], key[1], {"status": status}, "status")
        self._reported[key] = status
        if patched is not None:
            self.pod_cache.upsert(patched)

    def _stop(self, key: api.Key, grace_s: float | None = None) -> None:
        runner = self.runners.pop(key)
        self._reported.pop(key, None)
        log.info("stopping pod %s/%s", key[0], key[1])
        self.stopping[key] = asyncio.create_task(self._terminate(key, runner, grace_s))

    async def _terminate(self, key: api.Key, runner: pods.PodRunner, grace_s: float | None) -> None:
        try:
            await runner.stop(grace_s)
        finally:
            self.live.discard(runner)
            self.stopping.pop(key, None)
            self.node.on_change()

    def _release_claims(self) -> None:
        if not self.claim_cache.synced.is_set():
            return
        in_use = {(r.namespace, str(v["persistentVolumeClaim"]["claimName"]))
                  for r in list(self.runners.values())
                  for v in (r.pod.get("spec") or {}).get("volumes") or [] if "persistentVolumeClaim" in v}
        for namespace, name in self.claims.provisioned():
            if self.claim_cache.get(namespace, name) is None and (namespace, name) not in in_use \
                    and not self.stopping:
                log.info("releasing the volume of claim %s/%s", namespace, name)
                self.claims.release(namespace, name)

    async def shutdown(self, grace_s: float) -> None:
        """Stop every pod (SIGTERM, SIGKILL after grace_s) and wait for all of them."""
        for key in list(self.runners):
            self._stop(key, grace_s)
        await asyncio.gather(*self.stopping.values(), return_exceptions=True)

    def process_groups(self) -> list[int]:
        return [pgid for runner in list(self.live) for pgid in runner.process_groups()]
