"""Packages management on an in-process standalone: Apache's `/admin/v3/packages` REST API
over package bytes kept in ledgers of the standalone's bookie."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from pulsar_broker import standalone as standalone_module
from pulsar_broker.packages import names
from pulsar_broker.security import http_rules
from pulsar_common import testing
from pulsar_common.auth import token as auth_token

BASE = "/admin/v3/packages"
ONE = f"{BASE}/function/public/default/exclaim"


def _standalone(data_dir: pathlib.Path, **settings: str) -> standalone_module.Standalone:
    overrides = {"brokerServicePort": str(testing.free_port()),
                 "webServicePort": str(testing.free_port()),
                 "bookiePort": str(testing.free_port()),
                 "advertisedAddress": "127.0.0.1", "bindAddress": "127.0.0.1",
                 "journalSyncData": "false", "enablePackagesManagement": "true", **settings}
    return standalone_module.Standalone(
        data_dir, standalone_module.load_settings(data_dir, None, overrides),
        functions_worker=False)


@pytest.fixture
async def broker(tmp_path: pathlib.Path) -> AsyncIterator[standalone_module.Standalone]:
    instance = _standalone(tmp_path / "data", packagesMaxSizeBytes=str(3 << 20))
    await instance.start()
    try:
        yield instance
    finally:
        await instance.stop()


def _url(instance: standalone_module.Standalone) -> str:
    assert instance.service is not None
    return instance.service.web_service_url


def _form(content: bytes, metadata: object) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("file", content, filename="exclaim.py",
                   content_type="application/octet-stream")
    form.add_field("metadata", json.dumps(metadata), content_type="application/json")
    return form


async def test_an_uploaded_package_downloads_byte_for_byte_with_its_metadata(
        broker: standalone_module.Standalone) -> None:
    content = os.urandom(1_300_000)  # three ledger entries
    async with aiohttp.ClientSession(_url(broker)) as http:
        async with http.post(f"{ONE}/v1", data=_form(content, {
                "description": "exclaims", "contact": "dev@example.com",
                "properties": {"lang": "python"}})) as reply:
            assert reply.status == 204, await reply.text()
        async with http.get(f"{ONE}/v1") as reply:
            assert reply.status == 200
            assert reply.content_length == len(content)
            assert await reply.read() == content
        async with http.get(f"{ONE}/v1/metadata") as reply:
            metadata = await reply.json()
        assert metadata["description"] == "exclaims"
        assert metadata["contact"] == "dev@example.com"
        assert metadata["properties"] == {"lang": "python"}
        assert metadata["createTime"] > 0 and metadata["modificationTime"] == 0


async def test_metadata_updates_keep_the_create_time(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        async with http.post(f"{ONE}/v1", data=_form(b"x", {"description": "a"})) as reply:
            assert reply.status == 204
        async with http.get(f"{ONE}/v1/metadata") as reply:
            created = (await reply.json())["createTime"]
        async with http.put(f"{ONE}/v1/metadata",
                            json={"description": "b", "properties": {"k": "v"}}) as reply:
            assert reply.status == 204
        async with http.get(f"{ONE}/v1/metadata") as reply:
            metadata = await reply.json()
        assert (metadata["description"], metadata["properties"]) == ("b", {"k": "v"})
        assert metadata["createTime"] == created and metadata["modificationTime"] >= created
        async with http.put(f"{ONE}/v9/metadata", json={"description": "c"}) as reply:
            assert reply.status == 404


async def test_packages_and_versions_are_listed_and_deleted_one_version_at_a_time(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        for version in ("v1", "v2"):
            async with http.post(f"{ONE}/{version}", data=_form(version.encode(), {})) as reply:
                assert reply.status == 204
        async with http.post(f"{BASE}/sink/public/default/other/v1",
                             data=_form(b"s", {})) as reply:
            assert reply.status == 204
        async with http.get(f"{BASE}/function/public/default") as reply:
            assert await reply.json() == ["exclaim"]
        async with http.get(ONE) as reply:
            assert await reply.json() == ["v1", "v2"]
        async with http.delete(f"{ONE}/v1") as reply:
            assert reply.status == 204
        async with http.get(f"{ONE}/v1") as reply:
            assert reply.status == 404
        async with http.delete(f"{ONE}/v1") as reply:
            assert reply.status == 404
        async with http.get(ONE) as reply:
            assert await reply.json() == ["v2"]
        async with http.get(f"{ONE}/v2") as reply:
            assert await reply.read() == b"v2"


async def test_a_version_is_written_once(broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        async with http.post(f"{ONE}/v1", data=_form(b"first", {})) as reply:
            assert reply.status == 204
        async with http.post(f"{ONE}/v1", data=_form(b"second", {})) as reply:
            assert reply.status == 409
            assert "already exists" in (await reply.json())["reason"]
        async with http.get(f"{ONE}/v1") as reply:
            assert await reply.read() == b"first"


async def test_a_package_over_the_size_limit_is_refused_and_leaves_nothing(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        async with http.post(f"{ONE}/big", data=_form(b"x" * (4 << 20), {})) as reply:
            assert reply.status == 413
            assert "packagesMaxSizeBytes" in (await reply.json())["reason"]
        async with http.get(f"{ONE}/big/metadata") as reply:
            assert reply.status == 404


async def test_bad_names_and_bad_uploads_get_apache_statuses(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        async with http.get(f"{BASE}/jar/public/default") as reply:
            assert reply.status == 412
        async with http.get(f"{BASE}/function/public/nowhere") as reply:
            assert reply.status == 404
        async with http.post(f"{ONE}/v1", json={"description": "no file"}) as reply:
            assert reply.status == 400
        form = aiohttp.FormData()
        form.add_field("metadata", "{}", content_type="application/json")
        async with http.post(f"{ONE}/v1", data=form) as reply:
            assert reply.status == 400
        async with http.get(f"{ONE}/v1/metadata") as reply:
            assert reply.status == 404


async def test_packages_survive_a_restart_of_the_standalone(tmp_path: pathlib.Path) -> None:
    data_dir = tmp_path / "data"
    content = os.urandom(700_000)
    first = _standalone(data_dir)
    await first.start()
    try:
        async with aiohttp.ClientSession(_url(first)) as http, \
                http.post(f"{ONE}/v1", data=_form(content, {"description": "d"})) as reply:
            assert reply.status == 204
    finally:
        await first.stop()
    second = _standalone(data_dir)
    await second.start()
    try:
        async with aiohttp.ClientSession(_url(second)) as http, \
                http.get(f"{ONE}/v1") as reply:
            assert await reply.read() == content
    finally:
        await second.stop()


async def test_without_enable_packages_management_the_api_answers_503(
        tmp_path: pathlib.Path) -> None:
    instance = _standalone(tmp_path / "data", enablePackagesManagement="false")
    await instance.start()
    try:
        async with aiohttp.ClientSession(_url(instance)) as http, \
                http.get(f"{BASE}/function/public/default") as reply:
            assert reply.status == 503
            assert "enablePackagesManagement" in (await reply.json())["reason"]
    finally:
        await instance.stop()


def test_package_routes_need_the_namespace_packages_operation() -> None:
    for method, suffix in (("POST", "/{packageName}/{version}"), ("GET", ""),
                           ("PUT", "/{packageName}/{version}/metadata")):
        route = "/admin/v3/packages/{type}/{tenant}/{namespace}" + suffix
        assert http_rules.rule_for(method, route, "/admin/v3/packages/x") is http_rules.PACKAGES


@pytest.mark.parametrize(("url", "expected"), [
    ("function://public/default/f@v1", "function/public/default/f/v1"),
    ("sink://t/ns/s", "sink/t/ns/s/latest"),
])
def test_package_urls_parse_as_apache_names_them(url: str, expected: str) -> None:
    assert names.PackageName.parse(url).rest_path == expected


@pytest.mark.parametrize("url", ["jar://t/ns/f@1", "function://t/ns@1", "function://t/ns/f@a@b",
                                 "function://t/../f@1", "function//t/ns/f"])
def test_malformed_package_urls_are_refused(url: str) -> None:
    with pytest.raises(names.errors.InvalidPackageNameError):
        names.PackageName.parse(url)


async def test_on_a_secured_broker_packages_need_the_namespace_packages_permission(
        tmp_path: pathlib.Path) -> None:
    secret = os.urandom(32)
    (tmp_path / "secret.key").write_bytes(secret)
    instance = _standalone(
        tmp_path / "data", authenticationEnabled="true", authorizationEnabled="true",
        authenticationProviders="org.apache.pulsar.broker.authentication."
                                "AuthenticationProviderToken",
        tokenSecretKey=f"file://{tmp_path / 'secret.key'}", superUserRoles="admin")
    await instance.start()

    def bearer(role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {auth_token.create(secret, role)}"}

    try:
        async with aiohttp.ClientSession(_url(instance)) as http:
            async with http.post("/admin/v2/namespaces/public/default/permissions/packager",
                                 json=["packages"], headers=bearer("admin")) as reply:
                assert reply.status == 204
            async with http.post("/admin/v2/namespaces/public/default/permissions/writer",
                                 json=["produce"], headers=bearer("admin")) as reply:
                assert reply.status == 204
            async with http.post(f"{ONE}/v1", data=_form(b"code", {})) as reply:
                assert reply.status == 401
            async with http.post(f"{ONE}/v1", data=_form(b"code", {}),
                                 headers=bearer("writer")) as reply:
                assert reply.status == 403
            async with http.post(f"{ONE}/v1", data=_form(b"code", {}),
                                 headers=bearer("packager")) as reply:
                assert reply.status == 204
            async with http.get(f"{ONE}/v1", headers=bearer("packager")) as reply:
                assert await reply.read() == b"code"
            async with http.get(f"{ONE}/v1", headers=bearer("writer")) as reply:
                assert reply.status == 403
    finally:
        await instance.stop()


async def test_of_two_concurrent_uploads_of_one_version_exactly_one_wins(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:

        async def upload(content: bytes) -> int:
            async with http.post(f"{ONE}/race", data=_form(content, {})) as reply:
                return reply.status

        contents = [os.urandom(600_000), os.urandom(600_000)]
        statuses = await asyncio.gather(*(upload(c) for c in contents))
        assert sorted(statuses) == [204, 409]
        async with http.get(f"{ONE}/race") as reply:
            assert await reply.read() == contents[statuses.index(204)]


async def _damage(instance: standalone_module.Standalone, version: str) -> None:
    """Make the record's checksum disagree with the stored bytes."""
    assert instance.store is not None
    path = f"/packages/function/public/default/exclaim/{version}"
    found = await instance.store.get(path)
    assert found is not None
    record = json.loads(found.value)
    record["sha256"] = "0" * 64
    await instance.store.put(path, json.dumps(record).encode())


async def test_a_download_that_does_not_match_its_checksum_never_completes(
        broker: standalone_module.Standalone) -> None:
    async with aiohttp.ClientSession(_url(broker)) as http:
        for version, content in (("small", b"genuine"), ("large", os.urandom(1_100_000))):
            async with http.post(f"{ONE}/{version}", data=_form(content, {})) as reply:
                assert reply.status == 204
            await _damage(broker, version)
        async with http.get(f"{ONE}/small") as reply:
            assert reply.status == 500
            assert "checksum" in (await reply.json())["reason"]
        with pytest.raises(aiohttp.ClientPayloadError):
            async with http.get(f"{ONE}/large") as reply:
                assert reply.status == 200
                await reply.read()
