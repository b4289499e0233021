"""FunctionsWorker: membership, the leader's assignment, and running what is assigned here.

Every worker registers an ephemeral key. One of them, elected, assigns the
instances of every function to live workers (scheduler.py) and rewrites the
assignment whenever functions or workers change; a worker that dies loses
its key with its session, and its instances go to the others. Every worker
runs the instances assigned to it through the process runtime, and publishes
where each runs (an ephemeral key) for the status endpoints of any worker.
Changes arrive through watches; a resync every RESYNC_INTERVAL_S covers a
missed notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import pathlib
from typing import Any

from pulsar_common.metadata import api, tasks
from pulsar_common.metadata import errors as metadata_errors

from pulsar_functions import errors
from pulsar_functions.worker import config, function_store, records, runtime, scheduler

log = logging.getLogger(__name__)

RESYNC_INTERVAL_S = 5.0


class FunctionsWorker:
    def __init__(self, conf: config.WorkerConfig, store: api.MetadataStore) -> None:
        self.conf = conf
        self.worker_id = conf.effective_worker_id
        self.store = store
        self.functions = function_store.FunctionStore(store)
        self._changed = asyncio.Event()
        self.runtime = runtime.ProcessRuntime(pathlib.Path(conf.data_dir).absolute(),
                                              conf.worker_hostname, self._changed.set,
                                              conf.broker_client_settings)
        self._election = store.leader_election(records.LEADER)
        self._tasks: list[asyncio.Task[None]] = []
        self._published: dict[tuple[str, int], bytes] = {}
        self._code_cache: dict[tuple[str, int], bytes | None] = {}

    @property
    def is_leader(self) -> bool:
        return self._election.is_leader

    async def start(self) -> None:
        me = json.dumps({"workerId": self.worker_id, "workerHostname": self.conf.worker_hostname,
                         "port": self.conf.worker_port}).encode()
        await self.store.put(f"{records.WORKERS}/{self.worker_id}", me, ephemeral=True)
        for prefix in (records.METADATA, records.WORKERS, records.ASSIGNMENTS):
            self._tasks.append(asyncio.create_task(self._watch(prefix)))
        self._tasks.append(asyncio.create_task(self._lead()))
        self._tasks.append(asyncio.create_task(self._run_assigned()))

    async def stop(self) -> None:
        for task in self._tasks:
            await tasks.cancel_and_wait(task)
        await self._election.release()
        await self.runtime.stop_all()

    async def workers(self) -> list[dict[str, Any]]:
        found = []
        for worker_id in await self.store.get_children(records.WORKERS):
            result = await self.store.get(f"{records.WORKERS}/{worker_id}")
            if result is not None:
                found.append(json.loads(result.value))
        return found

    async def leader(self) -> dict[str, Any] | None:
        value = await self._election.leader_value()
        return None if value is None else dict(json.loads(value))

    async def _watch(self, prefix: str) -> None:
        while True:
            watch = self.store.watch(prefix, prefix=True)
            try:
                async for _ in watch:
                    self._changed.set()
            except metadata_errors.MetadataStoreError as exc:
                log.warning("watch on %s lost (%s); watching again", prefix, exc)
            finally:
                await watch.close()
            self._changed.set()

    async def _wait_for_change(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), RESYNC_INTERVAL_S)
        self._changed.clear()

    async def _lead(self) -> None:
        me = json.dumps({"workerId": self.worker_id,
                         "workerHostname": self.conf.worker_hostname,
                         "port": self.conf.worker_port}).encode()
        while True:
            await self._election.acquire(me)
            log.info("worker %s leads the function assignment", self.worker_id)
            while self._election.is_leader:
                try:
                    await self._assign()
                except (metadata_errors.MetadataStoreError, errors.FunctionsError) as exc:
                    log.warning("assignment failed: %s", exc)
                await self._wait_for_change()

    async def _assign(self) -> None:
        instances = [scheduler.instance_key(record.function.fqfn, i)
                     for record in await self.functions.all()
                     for i in range(record.function.parallelism)]
        workers = await self.store.get_children(records.WORKERS)
        current = await self.assignments()
        wanted = scheduler.assign(instances, workers, current)
        if wanted != current:
            await self.store.put(records.ASSIGNMENTS, json.dumps(wanted, sort_keys=True).encode())
            log.info("assigned %d instances to %d workers", len(wanted), len(set(workers)))

    async def assignments(self) -> dict[str, str]:
        result = await self.store.get(records.ASSIGNMENTS)
        return {} if result is None else dict(json.loads(result.value))

    async def _run_assigned(self) -> None:
        while True:
            try:
                await self._reconcile_local()
            except (metadata_errors.MetadataStoreError, errors.FunctionsError, OSError) as exc:
                log.warning("running the assigned instances failed: %s", exc)
            await self._wait_for_change()

    async def _reconcile_local(self) -> None:
        mine = {scheduler.split_key(key) for key, worker in (await self.assignments()).items()
                if worker == self.worker_id}
        wanted: set[tuple[str, int]] = set()
        for fqfn, instance_id in sorted(mine):
            try:
                record = await self.functions.get(fqfn)
            except errors.FunctionNotFoundError:
                continue
            if record.control(instance_id).state == records.RUNNING:
                wanted.add((fqfn, instance_id))
                await self.runtime.apply(await self._spec(record, instance_id))
        for key in list(self.runtime.instances):
            if key not in wanted:
                await self.runtime.stop(*key)
        await self._publish_runtime()

    async def _spec(self, record: records.FunctionRecord, instance_id: int) -> runtime.InstanceSpec:
        fqfn = record.function.fqfn
        cache_key = (fqfn, record.version)
        if cache_key not in self._code_cache:
            self._code_cache[cache_key] = await self.functions.code(record)
        code = self._code_cache[cache_key]
        document = record.function.to_json()
        document["brokerServiceUrl"] = self.conf.pulsar_service_url
        # Where the instance downloads a package URL (function://...) from.
        document["webServiceUrl"] = self.conf.pulsar_web_service_url
        if record.package_filename:
            directory = self.runtime.instance_dir(runtime.InstanceSpec(
                fqfn, instance_id, "", None, None, 0))
            document["py"] = str(directory / record.package_filename)
        return runtime.InstanceSpec(fqfn, instance_id, json.dumps(document, sort_keys=True),
                                    code, record.package_filename,
                                    record.control(instance_id).restart_epoch)

    async def _publish_runtime(self) -> None:
        running = {}
        for key, instance in self.runtime.instances.items():
            running[key] = json.dumps({
                "workerId": self.worker_id, "numRestarts": instance.restarts,
                "pid": instance.process.pid if instance.process is not None else None,
                "error": instance.last_error,
                "metricsUrl": f"http://{self.conf.worker_hostname}:{instance.metrics_port}",
            }).encode()
        for key, value in running.items():
            if self._published.get(key) != value:
                await self.store.put(records.runtime_path(*key), value, ephemeral=True)
                self._published[key] = value
        for key in list(self._published):
            if key not in running:
                del self._published[key]
                with contextlib.suppress(metadata_errors.NotFoundError):
                    await self.store.delete(records.runtime_path(*key))
