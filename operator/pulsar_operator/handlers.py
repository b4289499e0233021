"""kopf handlers: thin glue from kopf's events and timers to `services`.

`register` puts every handler into a registry (not kopf's global one), with
the resync interval from the command line: change handlers react at once,
timers re-run the same reconcile to pick up StatefulSet readiness and to
correct drift in Pulsar (tenants and namespaces edited behind our back).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from pulsar_operator import admin, errors, kube, naming, services
from pulsar_operator.loops import rebalance, report, runner

KINDS = {
    "cluster": (naming.GROUP, naming.VERSION, "pulsarclusters"),
    "tenant": (naming.GROUP, naming.VERSION, "tenants"),
    "namespace": (naming.GROUP, naming.VERSION, "pulsarnamespaces"),
    "function": (naming.GROUP, naming.VERSION, "functions"),
    "functionmesh": (naming.FUNCTION_MESH_GROUP, "v1alpha1", "functions"),
}


class Runtime:
    """State shared by the handlers: the login and the Kubernetes client built from it."""

    def __init__(self, config: services.OperatorConfig) -> None:
        self.config = config
        self.connection: kopf.ConnectionInfo | None = None
        self._client: kube.KubeClient | None = None
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self._balancing: dict[tuple[str, str], rebalance.Memory] = {}

    def lock(self, body: kopf.Body) -> asyncio.Lock:
        """One lock per object: its change handler and its timer never reconcile it at once
        (the bookie loops scale StatefulSets the reconcile also writes)."""
        key = (str(body.metadata.namespace), str(body.metadata.name))
        return self._locks.setdefault(key, asyncio.Lock())

    def balancing(self, body: kopf.Body) -> rebalance.Memory:
        """The rebalancing loop's memory of one cluster (usage history), for this process's life."""
        key = (str(body.metadata.namespace), str(body.metadata.name))
        return self._balancing.setdefault(key, rebalance.Memory())

    def set_connection(self, info: kopf.ConnectionInfo | None) -> None:
        """kopf logs in again when credentials expire; our client follows."""
        self.connection = info
        if info is not None and self._client is not None:
            self._client.update_credentials(info)

    def client(self) -> kube.KubeClient:
        if self._client is None:
            if self.connection is None:
                raise errors.OperatorError("not logged in to Kubernetes yet")
            self._client = kube.KubeClient(self.connection)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _login(state: Runtime, **kwargs: Any) -> kopf.ConnectionInfo | None:
    """kopf's own login (service account, else kubeconfig), shared with our client."""
    info = kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)
    state.set_connection(info)
    return info


def _configure(settings: kopf.OperatorSettings) -> None:
    settings.persistence.finalizer = naming.FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=naming.ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=naming.ANNOTATION_PREFIX, key="last-handled-configuration")
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    settings.networking.request_timeout = 60


def _stored(value: Any) -> Any:
    """`value` as the API server keeps it after a merge patch: a null removes its field, at any depth."""
    if isinstance(value, dict):
        return {key: _stored(item) for key, item in value.items() if item is not None}
    return value


def _set_status(patch: kopf.Patch, body: kopf.Body, status: dict[str, Any]) -> None:
    """Write only the status fields that changed; an unchanged status writes nothing."""
    old = services.plain(body.get("status") or {})
    changed = {key: value for key, value in status.items() if _stored(old.get(key)) != _stored(value)}
    if changed:
        patch["status"] = changed


def register(registry: kopf.OperatorRegistry, runtime: Runtime, *, function_mesh: bool = True) -> None:
    """Every handler of the operator, bound to `runtime`; function_mesh adds compute.functionmesh.io."""
    interval = runtime.config.resync_interval_s

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return _login(runtime, **kwargs)

    @kopf.on.startup(registry=registry)
    def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
        _configure(settings)

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await runtime.close()

    _register_cluster(registry, runtime, interval)
    _register_pulsar_resource(registry, runtime, interval, "tenant", services.sync_tenant)
    _register_pulsar_resource(registry, runtime, interval, "namespace", services.sync_namespace)
    for key in ("function", "functionmesh") if function_mesh else ("function",):
        _register_function(registry, runtime, interval, key)


#: Seconds before kopf retries a failed change handler (its default is 60).
RETRY_BACKOFF_S = 5.0


def _changes(registry: kopf.OperatorRegistry, key: str, fn: Any, id: str) -> None:
    group, version, plural = KINDS[key]
    for decorator in (kopf.on.create, kopf.on.update, kopf.on.resume):
        decorator(group, version, plural, registry=registry, id=id, backoff=RETRY_BACKOFF_S)(fn)


def _timer(registry: kopf.OperatorRegistry, key: str, fn: Any, interval: float) -> None:
    group, version, plural = KINDS[key]
    kopf.timer(group, version, plural, registry=registry, id="resync", interval=interval,
               initial_delay=interval, backoff=min(interval, RETRY_BACKOFF_S))(fn)


def _register_cluster(registry: kopf.OperatorRegistry, runtime: Runtime, interval: float) -> None:
    async def reconcile(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        def post(event: report.Event) -> None:
            kopf.event(body, type=event.type, reason=event.reason, message=event.message)

        async with runtime.lock(body):
            plain = services.plain(body)
            rollout = await runner.pause_before_rollout(plain, runtime.client())
            status = await services.reconcile_cluster(plain, runtime.client(), admin.AdminClient)
            status = await runner.run(plain, status, runtime.client(), post, services.now_iso(),
                                      balancing=runtime.balancing(body), rollout=rollout)
        _set_status(patch, body, status)

    _changes(registry, "cluster", reconcile, "reconcile")
    _timer(registry, "cluster", reconcile, interval)


def _register_pulsar_resource(
    registry: kopf.OperatorRegistry, runtime: Runtime, interval: float, key: str, sync: Any
) -> None:
    group, version, plural = KINDS[key]

    async def reconcile(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        _set_status(patch, body, await sync(services.plain(body), runtime.client(), admin.AdminClient))

    async def delete(body: kopf.Body, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any) -> None:
        try:
            logger.info(await services.delete_in_pulsar(services.plain(body), runtime.client(), admin.AdminClient))
        except errors.ClusterGoneError as exc:
            # The cluster is gone: nothing is left to clean up, so release the finalizer.
            logger.warning("not cleaning up in Pulsar: %s", exc)
        except errors.OperatorError as exc:
            raise kopf.TemporaryError(str(exc), delay=min(interval, 10.0)) from exc

    _changes(registry, key, reconcile, "reconcile")
    _timer(registry, key, reconcile, interval)
    kopf.on.delete(group, version, plural, registry=registry, id="cleanup")(delete)


def _register_function(registry: kopf.OperatorRegistry, runtime: Runtime, interval: float, key: str) -> None:
    async def reconcile(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        _set_status(patch, body, await services.reconcile_function(services.plain(body), runtime.client(),
                                                                   runtime.config))

    _changes(registry, key, reconcile, "reconcile")
    _timer(registry, key, reconcile, interval)
