"""Apache's functions REST API, `/admin/v3/functions/...`: register, update, delete, get, list.

create and update take multipart/form-data: `functionConfig` (FunctionConfig
JSON), and the code as a `data` file part or as a `url` (the instance
fetches it; a package URL, function://..., must name a package the brokers
have: package_check.py). Errors answer `{"reason": ...}` with Apache's status codes.
Requests are authenticated and authorized first when the worker is secured
(rest_security.py).
Instance control, status, trigger and state are in rest_instances.py.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from pulsar_functions import config, errors
from pulsar_functions.worker import (
    cleanup,
    package_check,
    rest_instances,
    rest_security,
    service,
    state_topic,
    topic_calls,
)
from pulsar_functions.worker.app_keys import CALLS_KEY, WORKER_KEY, fqfn_of, reason

BASE = "/admin/v3/functions"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_STATUS = {
    errors.FunctionNotFoundError: 404,
    errors.InstanceNotFoundError: 404,
    errors.FunctionAlreadyExistsError: 409,
    errors.InvalidFunctionConfigError: 400,
    errors.FunctionCodeError: 400,
}


@web.middleware
async def functions_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.FunctionsError as exc:
        return reason(_STATUS.get(type(exc), 500), str(exc))
    except TimeoutError as exc:
        return reason(408, str(exc) or "timed out")


def build_app(worker: service.FunctionsWorker, calls: topic_calls.TopicCalls) -> web.Application:
    security = rest_security.middleware(worker.conf, worker.store)
    middlewares = [functions_errors] if security is None else [security, functions_errors]
    app = web.Application(middlewares=middlewares, client_max_size=64 << 20)
    app[WORKER_KEY] = worker
    app[CALLS_KEY] = calls
    one = f"{BASE}/{{tenant}}/{{namespace}}/{{name}}"
    app.router.add_get("/status.html", _ok)
    app.router.add_get("/admin/v2/worker/cluster", _cluster)
    app.router.add_get("/admin/v2/worker/cluster/leader", _leader)
    app.router.add_get("/admin/v2/worker/assignments", _assignments)
    app.router.add_get(f"{BASE}/{{tenant}}/{{namespace}}", _list)
    app.router.add_post(one, _create)
    app.router.add_put(one, _update)
    app.router.add_delete(one, _delete)
    app.router.add_get(one, _get)
    rest_instances.add_routes(app, one)
    return app


async def _ok(_request: web.Request) -> web.Response:
    return web.Response(text="OK")


async def _cluster(request: web.Request) -> web.Response:
    return web.json_response(await request.app[WORKER_KEY].workers())


async def _leader(request: web.Request) -> web.Response:
    return web.json_response(await request.app[WORKER_KEY].leader())


async def _assignments(request: web.Request) -> web.Response:
    return web.json_response(await request.app[WORKER_KEY].assignments())


async def _list(request: web.Request) -> web.Response:
    info = request.match_info
    names = await request.app[WORKER_KEY].functions.names(info["tenant"], info["namespace"])
    return web.json_response(names)


async def _get(request: web.Request) -> web.Response:
    record = await request.app[WORKER_KEY].functions.get(fqfn_of(request))
    return web.json_response(record.function.to_json())


async def _form(request: web.Request) -> tuple[dict[str, Any], bytes | None, str | None]:
    """(functionConfig JSON, code bytes, code file name) of a multipart request."""
    if not request.content_type.startswith("multipart/"):
        raise errors.InvalidFunctionConfigError("send multipart/form-data with functionConfig")
    document: dict[str, Any] = {}
    code: bytes | None = None
    filename: str | None = None
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, aiohttp.BodyPartReader):
            continue
        if part.name == "functionConfig":
            try:
                document = json.loads(await part.read())
            except ValueError as exc:
                raise errors.InvalidFunctionConfigError("functionConfig is not JSON") from exc
        elif part.name == "data":
            code = bytes(await part.read())
            filename = (part.filename or "function.py").rsplit("/", 1)[-1]
        elif part.name == "url":
            document["pyLocation"] = (await part.read()).decode()
    return document, code, filename


def _checked(request: web.Request, document: dict[str, Any]) -> dict[str, Any]:
    info = request.match_info
    for key in ("tenant", "namespace", "name"):
        if document.get(key) not in (None, info[key]):
            raise errors.InvalidFunctionConfigError(f"{key} in functionConfig differs from the path")
        document[key] = info[key]
    return document


def _check_code(request: web.Request, code: bytes | None) -> None:
    limit = request.app[WORKER_KEY].conf.package_max_bytes
    if code is not None and len(code) > limit:
        raise errors.InvalidFunctionConfigError(
            f"function code of {len(code)} bytes exceeds maxPackageSizeBytes={limit}")


async def _create(request: web.Request) -> web.Response:
    document, code, filename = await _form(request)
    function = config.parse(_checked(request, document))
    if code is None and not function.py_location:
        raise errors.InvalidFunctionConfigError("send the code as a data part or a url")
    _check_code(request, code)
    worker = request.app[WORKER_KEY]
    if code is None:
        await package_check.check(worker.conf.pulsar_web_service_url, function.py_location,
                                  worker.conf.broker_client_settings)
    await worker.functions.create(function, code, filename)
    if worker.conf.state_compaction_threshold_bytes > 0:
        await state_topic.set_compaction_threshold(
            worker.conf.pulsar_web_service_url, function,
            worker.conf.state_compaction_threshold_bytes, worker.conf.broker_client_settings)
    return web.Response(status=204)


async def _update(request: web.Request) -> web.Response:
    document, code, filename = await _form(request)
    functions = request.app[WORKER_KEY].functions
    current = await functions.get(fqfn_of(request))
    _check_code(request, code)
    function = config.merge(current.function, _checked(request, document))
    if code is None and function.py_location != current.function.py_location:
        conf = request.app[WORKER_KEY].conf
        await package_check.check(conf.pulsar_web_service_url, function.py_location,
                                  conf.broker_client_settings)
    await functions.update(function, code, filename)
    return web.Response(status=204)


async def _delete(request: web.Request) -> web.Response:
    worker = request.app[WORKER_KEY]
    record = await worker.functions.delete(fqfn_of(request))
    if record.function.cleanup_subscription:
        await cleanup.delete_input_subscriptions(
            worker.store, worker.conf.pulsar_web_service_url, record.function,
            worker.conf.broker_client_settings)
    return web.Response(status=204)
