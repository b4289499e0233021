"""The compaction threshold a worker asks for on a new function's state topic: Apache's topic
policy path and body, the worker's broker credentials, and a refusal that is only logged."""

from __future__ import annotations

import asyncio
import json

from aiohttp import web
from pulsar_common import testing
from pulsar_functions import broker_client, config
from pulsar_functions.worker import state_topic

FUNCTION = config.parse({"tenant": "acme", "namespace": "apps", "name": "counter",
                         "className": "m.f", "inputs": ["in"]})


def threshold_call(status: int) -> tuple[bool, list[tuple[str, str, object, str | None]]]:
    """set_compaction_threshold against a broker stand-in answering status; what it saw."""
    seen: list[tuple[str, str, object, str | None]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((request.method, request.path, json.loads(await request.read()),
                     request.headers.get("Authorization")))
        return web.Response(status=status, text="" if status == 204 else '{"reason": "no"}')

    async def scenario() -> bool:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        port = testing.free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            client = broker_client.BrokerClientSettings(
                "org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc")
            return await state_topic.set_compaction_threshold(
                f"http://127.0.0.1:{port}", FUNCTION, 4096, client)
        finally:
            await runner.cleanup()

    return asyncio.run(scenario()), seen


def test_the_worker_sets_the_state_topic_s_compaction_threshold_as_its_broker_client() -> None:
    taken, seen = threshold_call(204)
    assert taken
    assert seen == [("POST", "/admin/v2/persistent/acme/apps/__function-state-counter/compactionThreshold",
                     4096, "Bearer abc")]


def test_a_refused_threshold_is_reported_not_raised() -> None:
    taken, seen = threshold_call(403)
    assert not taken and len(seen) == 1


def test_an_unreachable_broker_is_reported_not_raised() -> None:
    taken = asyncio.run(state_topic.set_compaction_threshold(
        f"http://127.0.0.1:{testing.free_port()}", FUNCTION, 1, broker_client.ANONYMOUS))
    assert not taken
