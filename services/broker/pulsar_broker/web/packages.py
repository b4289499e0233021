"""`/admin/v3/packages/...`: Apache's packages management REST API.

| call | path under /admin/v3/packages |
|---|---|
| upload (multipart: `file`, `metadata` JSON) | POST `{type}/{tenant}/{namespace}/{name}/{version}` |
| download | GET `{type}/{tenant}/{namespace}/{name}/{version}` |
| delete | DELETE `{type}/{tenant}/{namespace}/{name}/{version}` |
| metadata (PackageMetadata JSON) | GET / PUT `.../{version}/metadata` |
| versions of a package, packages of a type | GET `.../{name}`, GET `{type}/{tenant}/{namespace}` |

Uploads are streamed into a ledger as they arrive (packages/storage.py), so
this API is not bound by the 1 MiB limit of the rest of the admin API; it
has its own, packagesMaxSizeBytes (413 beyond it). With
enablePackagesManagement off every call answers 503. Authorization is the
namespace's `packages` operation (security/http_rules.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
from aiohttp import web

from pulsar_broker.packages import errors, names, records, storage
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

log = logging.getLogger(__name__)

routes = web.RouteTableDef()

BASE = "/admin/v3/packages/{type}/{tenant}/{namespace}"
ONE = BASE + "/{packageName}/{version}"
#: Bytes read from the request per step while streaming an upload.
READ_CHUNK_BYTES = 64 * 1024
#: Largest metadata part of an upload.
METADATA_MAX_BYTES = 64 * 1024


class _Storage:
    """The broker's PackageStorage, made on first use."""

    def __init__(self) -> None:
        self.value: storage.PackageStorage | None = None

    def get(self, service: BrokerService) -> storage.PackageStorage:
        conf = service.config
        if not conf.enable_packages_management or service.ledger_client is None:
            raise errors.PackagesDisabledError(
                "Packages management is not enabled on this broker "
                "(enablePackagesManagement=true enables it)")
        if self.value is None:
            if conf.packages_replicas:
                replication = storage.Replication(*(conf.packages_replicas,) * 3)
            else:
                ml = service.ledger_factory.default_config
                replication = storage.Replication(ml.ensemble_size, ml.write_quorum,
                                                  ml.ack_quorum)
            self.value = storage.PackageStorage(
                service.resources.store, service.ledger_client, replication,
                conf.packages_max_size_bytes)
        return self.value


STORAGE = web.AppKey("packages_storage", _Storage)


async def _checked(request: web.Request) -> storage.PackageStorage:
    service = rest.service(request)
    packages = request.app[STORAGE].get(service)
    info = request.match_info
    names.PackageType.of(info["type"])
    for what in ("tenant", "namespace"):
        names.check_part(what, info[what])
    await service.check_namespace(rest.namespace_name(request))
    return packages


def _name(request: web.Request) -> names.PackageName:
    info = request.match_info
    return names.PackageName.of(info["type"], info["tenant"], info["namespace"],
                                info["packageName"], info["version"])


@routes.get(BASE)
async def list_packages(request: web.Request) -> web.Response:
    packages = await _checked(request)
    info = request.match_info
    return rest.ok_json(await packages.names(names.PackageType.of(info["type"]),
                                             info["tenant"], info["namespace"]))


@routes.get(BASE + "/{packageName}")
async def list_versions(request: web.Request) -> web.Response:
    packages = await _checked(request)
    info = request.match_info
    name = names.PackageName.of(info["type"], info["tenant"], info["namespace"],
                                info["packageName"])
    return rest.ok_json(await packages.versions(name))


@routes.get(ONE + "/metadata")
async def get_metadata(request: web.Request) -> web.Response:
    packages = await _checked(request)
    return rest.ok_json((await packages.get(_name(request))).metadata.to_json())


@routes.put(ONE + "/metadata")
async def update_metadata(request: web.Request) -> web.Response:
    packages = await _checked(request)
    metadata = records.PackageMetadata.from_json(await rest.body_json(request))
    await packages.update_metadata(_name(request), metadata)
    return rest.no_content()


@routes.delete(ONE)
async def delete_package(request: web.Request) -> web.Response:
    packages = await _checked(request)
    await packages.delete(_name(request))
    return rest.no_content()


@routes.get(ONE)
async def download(request: web.Request) -> web.StreamResponse:
    packages = await _checked(request)
    stored, chunks = await packages.read(_name(request))
    # The first chunk is read before the headers go out, so a package of one entry that
    # fails its checksum is answered with an error status.
    first = await anext(chunks, b"")
    response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
    response.content_length = stored.size_bytes
    await response.prepare(request)
    try:
        await response.write(first)
        async for chunk in chunks:
            await response.write(chunk)
    except errors.PackageCorruptError:
        # Too late for a status: the connection is dropped, so the client sees fewer bytes
        # than Content-Length announced, never a wrong package.
        log.exception("download of %s stopped", _name(request))
        if request.transport is not None:
            request.transport.abort()
        return response
    await response.write_eof()
    return response


@routes.post(ONE)
async def upload(request: web.Request) -> web.Response:
    packages = await _checked(request)
    name = _name(request)
    if not request.content_type.startswith("multipart/"):
        raise errors.InvalidPackageMetadataError(
            "send multipart/form-data with a file part and a metadata part")
    timeout_s = rest.service(request).config.http_server_idle_timeout_millis / 1000
    writer = await packages.begin_upload(name)
    try:
        metadata, got_file = await _receive(await request.multipart(), writer, timeout_s)
        if not got_file:
            raise errors.InvalidPackageMetadataError("the upload has no file part")
        if metadata is None:
            raise errors.InvalidPackageMetadataError("invalid package metadata")
        await writer.commit(metadata)
    except errors.PackageExistsError:
        raise
    except BaseException:
        await writer.abort()
        raise
    return rest.no_content()


async def _receive(reader: aiohttp.MultipartReader, writer: storage.PackageUpload,
                   timeout_s: float) -> tuple[records.PackageMetadata | None, bool]:
    """Stream the file part into writer; the metadata part, and whether a file came."""
    metadata = None
    got_file = False
    while (part := await _timed(reader.next(), timeout_s)) is not None:
        if not isinstance(part, aiohttp.BodyPartReader):
            continue
        if part.name == "file":
            got_file = True
            while chunk := await _timed(part.read_chunk(READ_CHUNK_BYTES), timeout_s):
                await writer.write(bytes(chunk))
        elif part.name == "metadata":
            raw = bytearray()
            while chunk := await _timed(part.read_chunk(READ_CHUNK_BYTES), timeout_s):
                raw += chunk
                if len(raw) > METADATA_MAX_BYTES:
                    raise errors.InvalidPackageMetadataError("package metadata is too large")
            try:
                metadata = records.PackageMetadata.from_json(json.loads(raw or b"null"))
            except ValueError as exc:
                raise errors.InvalidPackageMetadataError("invalid package metadata") from exc
    return metadata, got_file


async def _timed(step: Any, timeout_s: float) -> Any:
    try:
        async with asyncio.timeout(timeout_s):
            return await step
    except TimeoutError as exc:
        raise web.HTTPRequestTimeout(reason="Request body not received in time") from exc


def install(app: web.Application) -> None:
    app[STORAGE] = _Storage()
    app.router.add_routes(routes)

