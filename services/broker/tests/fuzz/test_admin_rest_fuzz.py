"""A bounded fuzz of every admin REST route the broker's aiohttp app registers.

The routes come from `app.router.routes()` of the app `pulsar standalone` serves; each one
gets a few requests with hostile path segments (`..`, `%2e%2e`, NUL, 2000 characters,
numbers past Java's types), query values and bodies (wrong JSON types, numbers beyond
int64, invalid JSON, deep nesting), plus plausible names so that handlers past the name
checks are reached. Apache answers bad input with a 4xx; here, for every request:

- no 5xx: bad input is the client's error, and nothing inside may break on it;
- no hang: an answer within REQUEST_TIMEOUT_S;
- nothing stored: a 4xx changes none of the admin metadata (clusters, tenants,
  namespaces, partitioned topics, managed ledgers).

The standalone runs in this process (on a thread of its own, with its event loop), so
the test can walk the app's routes and read its metadata store directly; requests are
real HTTP from the test's thread, so a handler that blocks the loop shows as a timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import random
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from pulsar_broker import resources
from pulsar_broker import standalone as standalone_module
from pulsar_broker.web import app as web_app
from pulsar_common import testing

T = TypeVar("T")

#: Requests per route.
REQUESTS_PER_ROUTE = 8
REQUEST_TIMEOUT_S = 10.0
#: Metadata an invalid request must leave alone.
WATCHED_ROOTS = (resources.CLUSTERS, resources.POLICIES, resources.PARTITIONED,
                 resources.MANAGED_LEDGERS)
#: Routes whose 5xx is the documented answer, with the reason.
EXPECTED_5XX: dict[tuple[str, str], str] = {}

PLAUSIBLE = {"tenant": "public", "namespace": "default", "cluster": "standalone",
             "topic": "fuzz-rest", "subscription": "s", "property": "public"}
HOSTILE_SEGMENTS = (
    "..", "%2e%2e", ".", "%00", "a" * 2000, "-1", "9223372036854775808", "x y", "%ff",
    "é", "%2F", "a%2Fb", "{x}", "*", "0", "public", "default", "fuzz-rest-partition-99999999999",
    "fuzz-rest-partition--1", "persistent:", "\u202e",
)
HOSTILE_QUERY_VALUES = ("", "-1", "9223372036854775808", "1e400", "maybe", "..", "%00",
                        "a" * 3000, "true", "false", "ALL", "PERSISTENT")
QUERY_KEYS = ("authoritative", "force", "mode", "checkAllowAutoCreation", "metadata",
              "deleteSchema", "messagePosition", "isGlobal", "applied", "bundle", "unload",
              "x")
HOSTILE_BODIES: tuple[bytes, ...] = (
    b"null", b'"text"', b"[]", b"{}", b"1e400", b"-1", b"9223372036854775808",
    b"18446744073709551616", b"{", b"\xff\xfe", b"[" * 2000 + b"]" * 2000,
    json.dumps({"allowedClusters": "standalone", "adminRoles": {}}).encode(),
    json.dumps({"retentionTimeInMinutes": "x", "retentionSizeInMB": 10**30}).encode(),
    json.dumps({"ledgerId": -5, "entryId": 2**70}).encode(),
    json.dumps({"messageTTL": 10**26, "numBundles": -3}).encode(),
    json.dumps("a" * 100_000).encode(),
    json.dumps({"bundles": {"boundaries": ["0x1", "0x0"], "numBundles": 2}}).encode(),
    b"3", b"0", b"true",
)


class StandaloneThread:
    """An in-process `pulsar standalone` whose event loop runs on its own thread."""

    def __init__(self, data_dir: pathlib.Path) -> None:
        overrides = {"brokerServicePort": str(testing.free_port()),
                     "webServicePort": str(testing.free_port()),
                     "bookiePort": str(testing.free_port()),
                     "advertisedAddress": "127.0.0.1", "bindAddress": "127.0.0.1",
                     "journalSyncData": "false",
                     # So the packages routes are fuzzed, not answered 503 (disabled).
                     "enablePackagesManagement": "true"}
        settings = standalone_module.load_settings(data_dir, None, overrides)
        self.instance = standalone_module.Standalone(data_dir, settings, functions_worker=False)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="standalone",
                                       daemon=True)

    def __enter__(self) -> StandaloneThread:
        self.thread.start()
        self.run(self.instance.start())
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.run(self.instance.stop(), timeout_s=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    @property
    def web_url(self) -> str:
        assert self.instance.service is not None
        return str(self.instance.service.web_service_url)

    def routes(self) -> list[tuple[str, str]]:
        """(method, path template) of every route the served app registers."""
        service = self.instance.service
        assert service is not None

        async def walk() -> list[tuple[str, str]]:
            app = web_app.create_app(service)
            found = set()
            for route in app.router.routes():
                if route.method in ("HEAD", "OPTIONS", "*"):
                    continue
                found.add((route.method, route.resource.canonical if route.resource else ""))
            return sorted(found)

        return self.run(walk())

    def snapshot(self) -> dict[str, int]:
        """Path -> version of everything under WATCHED_ROOTS."""
        store = self.instance.store
        assert store is not None

        async def walk() -> dict[str, int]:
            found: dict[str, int] = {}
            pending = list(WATCHED_ROOTS)
            while pending:
                path = pending.pop()
                got = await store.get(path)
                if got is not None:
                    found[path] = got.stat.version
                pending += [f"{path}/{child}" for child in await store.get_children(path)]
            return found

        return self.run(walk())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneThread]:
    with StandaloneThread(tmp_path_factory.mktemp("rest-fuzz") / "data") as running:
        yield running


def hostile_request(rng: random.Random, method: str, template: str) -> tuple[str, bytes | None]:
    """A path (with query) and a body for one route."""
    path = template
    while "{" in path:
        start = path.index("{")
        end = path.index("}", start)
        name = path[start + 1:end].split(":")[0]
        if rng.random() < 0.4 and name in PLAUSIBLE:
            value = PLAUSIBLE[name]
        else:
            # Quoted whole, or with '.', '%', '*', braces left as they are (so that `..`
            # and pre-encoded `%2e%2e` reach the server raw); never raw non-ASCII.
            safe = "%" if rng.random() < 0.5 else "%./*{}:-"
            value = urllib.parse.quote(rng.choice(HOSTILE_SEGMENTS), safe=safe)
        path = path[:start] + value + path[end + 1:]
    if rng.random() < 0.6:
        query = {rng.choice(QUERY_KEYS): rng.choice(HOSTILE_QUERY_VALUES)
                 for _ in range(rng.randrange(1, 4))}
        path += "?" + urllib.parse.urlencode(query)
    body = rng.choice(HOSTILE_BODIES) if method in ("PUT", "POST", "DELETE") else None
    return path, body


def call(base_url: str, method: str, path: str, body: bytes | None) -> int:
    request = urllib.request.Request(base_url + path, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as reply:
            reply.read()
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        return int(exc.code)


def test_every_admin_route_answers_hostile_input_with_a_4xx_and_stores_nothing(
        served: StandaloneThread) -> None:
    routes = [r for r in served.routes() if r[1].startswith(("/admin/", "/lookup/"))]
    assert len(routes) > 100, routes
    seed = int(os.environ.get("REST_FUZZ_SEED", "17"))
    assert f"{resources.POLICIES}/public/default" in served.snapshot()
    problems: list[str] = []
    for method, template in routes:
        rng = random.Random(f"{seed}:{method}:{template}")
        for _ in range(REQUESTS_PER_ROUTE):
            path, body = hostile_request(rng, method, template)
            before = served.snapshot()
            try:
                status = call(served.web_url, method, path, body)
            except TimeoutError:
                problems.append(f"{method} {path[:200]}: no answer in {REQUEST_TIMEOUT_S}s")
                continue
            where = f"{method} {path[:200]} body {(body or b'')[:60]!r}"
            if status >= 500 and (method, template) not in EXPECTED_5XX:
                problems.append(f"{where}: {status}")
            if 400 <= status < 500:
                after = served.snapshot()
                changed = sorted(set(before.items()) ^ set(after.items()))
                if changed:
                    problems.append(f"{where}: {status} but stored {changed[:3]}")
    print(f"{len(routes)} routes, {len(routes) * REQUESTS_PER_ROUTE} requests (seed {seed})")
    assert not problems, f"{len(problems)} problems (seed {seed}):\n" + "\n".join(problems)
