"""Function records and their code in the metadata store (paths in records.py).

Every change is a compare-and-set on the function's record, so two workers
serving the same admin call at once cannot both win; the code of each
version is kept under its own key and the previous one deleted.
"""

from __future__ import annotations

import dataclasses
import time

from pulsar_common.metadata import api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_functions import config, errors
from pulsar_functions.worker import records


class FunctionStore:
    def __init__(self, store: api.MetadataStore) -> None:
        self._store = store

    async def get(self, fqfn: str) -> records.FunctionRecord:
        record, _ = await self._get_versioned(fqfn)
        return record

    async def _get_versioned(self, fqfn: str) -> tuple[records.FunctionRecord, int]:
        result = await self._store.get(records.metadata_path(fqfn))
        if result is None:
            raise errors.FunctionNotFoundError(f"function {fqfn} does not exist")
        return records.FunctionRecord.decode(result.value), result.stat.version

    async def names(self, tenant: str, namespace: str) -> list[str]:
        return await self._store.get_children(f"{records.METADATA}/{tenant}/{namespace}")

    async def all(self) -> list[records.FunctionRecord]:
        found = []
        for tenant in await self._store.get_children(records.METADATA):
            for namespace in await self._store.get_children(f"{records.METADATA}/{tenant}"):
                for name in await self.names(tenant, namespace):
                    try:
                        found.append(await self.get(f"{tenant}/{namespace}/{name}"))
                    except errors.FunctionNotFoundError:
                        continue
        return found

    async def code(self, record: records.FunctionRecord) -> bytes | None:
        if record.package_filename is None:
            return None
        result = await self._store.get(records.package_path(record.function.fqfn,
                                                            record.version))
        return None if result is None else result.value

    async def create(self, function: config.FunctionConfig, code: bytes | None,
                     filename: str | None) -> records.FunctionRecord:
        record = records.FunctionRecord(
            function, 0, int(time.time() * 1000), filename if code is not None else None,
            tuple(records.InstanceControl() for _ in range(function.parallelism)))
        if code is not None:
            await self._store.put(records.package_path(function.fqfn, 0), code)
        try:
            await self._store.put(records.metadata_path(function.fqfn), record.encode(),
                                  api.VERSION_ABSENT)
        except metadata_errors.AlreadyExistsError as exc:
            raise errors.FunctionAlreadyExistsError(
                f"function {function.fqfn} already exists") from exc
        return record

    async def update(self, function: config.FunctionConfig, code: bytes | None,
                     filename: str | None) -> records.FunctionRecord:
        current, version = await self._get_versioned(function.fqfn)
        new_version = current.version + 1
        controls = tuple(current.control(i) for i in range(function.parallelism))
        if code is not None:
            await self._store.put(records.package_path(function.fqfn, new_version), code)
            package = filename
        else:
            package = current.package_filename
            old = await self.code(current)
            if old is not None:
                await self._store.put(records.package_path(function.fqfn, new_version), old)
        record = dataclasses.replace(current, function=function, version=new_version,
                                     package_filename=package, instances=controls)
        await self._cas(function.fqfn, record, version)
        await self._drop_package(function.fqfn, current.version)
        return record

    async def set_controls(self, fqfn: str, instance_id: int | None, *, state: str | None = None,
                           restart: bool = False) -> None:
        record, version = await self._get_versioned(fqfn)
        parallelism = record.function.parallelism
        if instance_id is not None and not 0 <= instance_id < parallelism:
            raise errors.InstanceNotFoundError(f"{fqfn} has no instance {instance_id}")
        chosen = range(parallelism) if instance_id is None else [instance_id]
        controls = [record.control(i) for i in range(parallelism)]
        for i in chosen:
            control = controls[i]
            controls[i] = records.InstanceControl(
                state or control.state, control.restart_epoch + (1 if restart else 0))
        await self._cas(fqfn, dataclasses.replace(record, instances=tuple(controls)), version)

    async def delete(self, fqfn: str) -> records.FunctionRecord:
        record, version = await self._get_versioned(fqfn)
        try:
            await self._store.delete(records.metadata_path(fqfn), version)
        except metadata_errors.BadVersionError as exc:
            raise errors.FunctionsError(f"{fqfn} changed meanwhile; try again") from exc
        await self._store.delete_recursive(f"{records.PACKAGES}/{fqfn}")
        return record

    async def _cas(self, fqfn: str, record: records.FunctionRecord, version: int) -> None:
        try:
            await self._store.put(records.metadata_path(fqfn), record.encode(), version)
        except (metadata_errors.BadVersionError, metadata_errors.NotFoundError) as exc:
            raise errors.FunctionsError(f"{fqfn} changed meanwhile; try again") from exc

    async def _drop_package(self, fqfn: str, version: int) -> None:
        try:
            await self._store.delete(records.package_path(fqfn, version))
        except metadata_errors.NotFoundError:
            pass
