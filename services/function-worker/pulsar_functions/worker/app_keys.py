"""What the REST handlers share: the worker and topic calls on the app, error replies, names."""

from __future__ import annotations

from aiohttp import web

from pulsar_functions.worker import service, topic_calls

WORKER_KEY: web.AppKey[service.FunctionsWorker] = web.AppKey("worker", service.FunctionsWorker)
CALLS_KEY: web.AppKey[topic_calls.TopicCalls] = web.AppKey("calls", topic_calls.TopicCalls)


def reason(status: int, text: str) -> web.Response:
    """Apache's error body."""
    return web.json_response({"reason": text}, status=status)


def fqfn_of(request: web.Request) -> str:
    info = request.match_info
    return f"{info['tenant']}/{info['namespace']}/{info['name']}"
