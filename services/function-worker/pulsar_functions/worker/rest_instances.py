"""The per-instance part of `/admin/v3/functions/{tenant}/{namespace}/{name}`.

status and stats ask every instance for its numbers (its `/stats`, at the
address the worker running it published), whichever worker serves the call;
start, stop and restart change the instances' controls in the function's
record, which the workers running them act on; trigger and state go through
topics (topic_calls.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from aiohttp import web

from pulsar_functions import errors, state_log
from pulsar_functions.worker import records
from pulsar_functions.worker.app_keys import CALLS_KEY, WORKER_KEY, fqfn_of, reason

#: How long status waits for one instance's /stats.
INSTANCE_STATS_TIMEOUT_S = 5.0


def add_routes(app: web.Application, one: str) -> None:
    app.router.add_get(f"{one}/status", _status)
    app.router.add_get(f"{one}/stats", _stats)
    app.router.add_get(f"{one}/{{instance}}/status", _instance_status)
    app.router.add_get(f"{one}/{{instance}}/stats", _instance_stats)
    for action in ("start", "stop", "restart"):
        app.router.add_post(f"{one}/{action}", _control)
        app.router.add_post(f"{one}/{{instance}}/{action}", _control)
    app.router.add_post(f"{one}/trigger", _trigger)
    app.router.add_get(f"{one}/state/{{key}}", _query_state)
    app.router.add_post(f"{one}/state/{{key}}", _put_state)


async def _instance_status_json(request: web.Request, fqfn: str,
                                instance_id: int) -> dict[str, Any]:
    worker = request.app[WORKER_KEY]
    record = await worker.functions.get(fqfn)
    status: dict[str, Any] = {"running": False, "error": "", "numRestarts": 0, "workerId": ""}
    if record.control(instance_id).state == records.STOPPED:
        status["error"] = "stopped"
        return status
    placed = await worker.store.get(records.runtime_path(fqfn, instance_id))
    if placed is None:
        status["error"] = "not running yet"
        return status
    where = json.loads(placed.value)
    status.update(workerId=where["workerId"], numRestarts=where["numRestarts"],
                  error=where["error"])
    try:
        timeout = aiohttp.ClientTimeout(total=INSTANCE_STATS_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as session, \
                session.get(f"{where['metricsUrl']}/stats") as reply:
            status.update(await reply.json())
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        status["running"] = False
        status["error"] = f"instance not answering: {exc}"
    return status


async def _status(request: web.Request) -> web.Response:
    fqfn = fqfn_of(request)
    record = await request.app[WORKER_KEY].functions.get(fqfn)
    statuses = await asyncio.gather(*(_instance_status_json(request, fqfn, i)
                                      for i in range(record.function.parallelism)))
    return web.json_response({
        "numInstances": len(statuses),
        "numRunning": sum(1 for s in statuses if s.get("running")),
        "instances": [{"instanceId": i, "status": s} for i, s in enumerate(statuses)],
    })


def _instance_id(request: web.Request) -> int:
    try:
        return int(request.match_info["instance"])
    except ValueError as exc:
        raise errors.InstanceNotFoundError(f"bad instance id {request.match_info['instance']}"
                                           ) from exc


async def _instance_status(request: web.Request) -> web.Response:
    fqfn, instance_id = fqfn_of(request), _instance_id(request)
    record = await request.app[WORKER_KEY].functions.get(fqfn)
    if not 0 <= instance_id < record.function.parallelism:
        raise errors.InstanceNotFoundError(f"{fqfn} has no instance {instance_id}")
    return web.json_response(await _instance_status_json(request, fqfn, instance_id))


def _metrics(status: dict[str, Any]) -> dict[str, Any]:
    return {"receivedTotal": status.get("numReceived", 0),
            "processedSuccessfullyTotal": status.get("numSuccessfullyProcessed", 0),
            "systemExceptionsTotal": status.get("numSystemExceptions", 0),
            "userExceptionsTotal": status.get("numUserExceptions", 0),
            "avgProcessLatency": status.get("averageLatency", 0),
            "lastInvocation": status.get("lastInvocationTime", 0),
            "userMetrics": status.get("userMetrics", {})}


async def _stats(request: web.Request) -> web.Response:
    fqfn = fqfn_of(request)
    record = await request.app[WORKER_KEY].functions.get(fqfn)
    statuses = await asyncio.gather(*(_instance_status_json(request, fqfn, i)
                                      for i in range(record.function.parallelism)))
    per_instance = [_metrics(s) for s in statuses]
    totals = {key: sum(m[key] for m in per_instance) for key in (
        "receivedTotal", "processedSuccessfullyTotal", "systemExceptionsTotal",
        "userExceptionsTotal")}
    return web.json_response({**totals, "instances": [
        {"instanceId": i, "metrics": m} for i, m in enumerate(per_instance)]})


async def _instance_stats(request: web.Request) -> web.Response:
    status = await _instance_status_json(request, fqfn_of(request), _instance_id(request))
    return web.json_response(_metrics(status))


async def _control(request: web.Request) -> web.Response:
    action = request.path.rsplit("/", 1)[1]
    instance_id = _instance_id(request) if "instance" in request.match_info else None
    state = {"start": records.RUNNING, "stop": records.STOPPED}.get(action)
    await request.app[WORKER_KEY].functions.set_controls(
        fqfn_of(request), instance_id, state=state, restart=action == "restart")
    return web.Response(status=204)


async def _trigger(request: web.Request) -> web.Response:
    record = await request.app[WORKER_KEY].functions.get(fqfn_of(request))
    fields: dict[str, bytes] = {}
    if request.content_type.startswith("multipart/"):
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if isinstance(part, aiohttp.BodyPartReader) and part.name:
                fields[part.name] = bytes(await part.read())
    value = fields.get("data", fields.get("dataStream"))
    if value is None:
        return reason(400, "send the value as a data or dataStream part")
    topic = fields["topic"].decode() if fields.get("topic") else None
    output = await request.app[CALLS_KEY].trigger(record.function, topic, value)
    return web.Response(body=output or b"", content_type="text/plain")


async def _query_state(request: web.Request) -> web.Response:
    record = await request.app[WORKER_KEY].functions.get(fqfn_of(request))
    key = request.match_info["key"]
    entry = await request.app[CALLS_KEY].query_state(record.function, key)
    if entry is None:
        return reason(404, f"key {key} does not exist")
    return web.json_response(state_log.function_state_json(key, entry))


async def _put_state(request: web.Request) -> web.Response:
    record = await request.app[WORKER_KEY].functions.get(fqfn_of(request))
    key = request.match_info["key"]
    raw: bytes = b""
    if request.content_type.startswith("multipart/"):
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if isinstance(part, aiohttp.BodyPartReader) and part.name == "state":
                raw = bytes(await part.read())
    else:
        raw = await request.read()
    try:
        document = json.loads(raw)
        update = state_log.update_from_state_json(key, document)
    except (ValueError, TypeError) as exc:
        return reason(400, f"state is not a FunctionState JSON: {exc}")
    if document.get("key") not in (None, key):
        return reason(400, "the key in the state differs from the path")
    await request.app[CALLS_KEY].put_state(record.function, update)
    return web.Response(status=204)
