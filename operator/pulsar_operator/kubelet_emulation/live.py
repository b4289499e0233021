"""A live "Kubernetes cluster" for e2e tests: the API emulator, the operator process and the
kubelet harness started together, driven the way a user drives a cluster (kubectl, the
API), and torn down together. Test-only, like the rest of this package."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from pulsar_common.testing import free_port

from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api, harness

#: How long one wait for an object's state lasts unless told otherwise.
WAIT_S = 90.0


class LiveCluster:
    def __init__(self, kubeconfig: pathlib.Path, client: api.ApiClient, cluster: harness.Harness,
                 operator: emulation.OperatorProcess, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.api = client
        self.cluster = cluster
        self.operator = operator
        self.namespace = namespace

    async def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return await emulation.kubectl(self.kubeconfig, *args, stdin=stdin)

    async def wait(self, resource: api.Resource, name: str, predicate: Callable[[dict[str, Any]], bool],
                   what: str, timeout_s: float = WAIT_S) -> dict[str, Any]:
        """The object once predicate holds for it; fails fast with the operator's log if it died."""
        found: dict[str, Any] = {}

        async def check() -> bool:
            await self.operator.healthy()
            obj = await self.api.get(resource, self.namespace, name)
            if obj is not None and predicate(obj):
                found.update(obj)
                return True
            return False

        await emulation.wait_for(check, timeout_s, what)
        return found

    async def status(self, resource: api.Resource, name: str) -> dict[str, Any]:
        obj = await self.api.get(resource, self.namespace, name)
        assert obj is not None, f"{resource.kind} {name} does not exist"
        return dict(obj.get("status") or {})


@contextlib.asynccontextmanager
async def running(state: pathlib.Path, namespace: str, failed: Callable[[], bool],
                  log_chars: int = 6000) -> AsyncIterator[LiveCluster]:
    """Emulator, harness (custom resources own their children) and operator process (watching
    namespace, resyncing every 2 s, resolving cluster names as a pod would). When failed()
    says a test failed, the pods' and the operator's logs are printed at teardown."""
    async with emulation.running_emulator() as (_, url):
        kubeconfig = emulation.write_kubeconfig(state / "kubeconfig", url, namespace)
        client = api.ApiClient(url)
        cluster = harness.Harness(url, state / "node", owners=harness.custom_resources(),
                                  backoff_initial_s=1.0, backoff_max_s=10.0)
        operator = emulation.OperatorProcess(kubeconfig, free_port(), "--no-leader-election",
                                             "--namespace", namespace, "--resync-interval", "2",
                                             log=state / "operator.log")
        operator.args = cluster.wrap(operator.args)  # it reaches the admin URL by cluster DNS
        await cluster.start()
        try:
            await operator.start()
            await emulation.wait_for(operator.healthy, WAIT_S, "operator /healthz")
            yield LiveCluster(kubeconfig, client, cluster, operator, namespace)
        finally:
            await operator.stop()
            await cluster.stop()
            await client.close()
            if failed():
                print(cluster.logs(log_chars))
                print("----- operator.log -----\n" + operator.log.read_text()[-log_chars:])
