"""Admin operations on the partitions of a partitioned topic that other brokers serve.

A request for a partitioned topic is answered by the broker it reached: that
broker does the work on the partitions it serves and sends the request for
each other partition to the partition's broker, as Apache's brokers do
through their internal admin client, then combines the answers.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.web import rest

Remote = list[tuple[naming.TopicName, BrokerUrls]]


def partition_path(partition: naming.TopicName, suffix: str) -> str:
    """`/admin/v2/<domain>/<tenant>/<ns>/<partition><suffix>`."""
    quote = urllib.parse.quote
    return (f"/admin/v2/{partition.domain.value}/{quote(partition.tenant, safe='')}/"
            f"{quote(partition.namespace, safe='')}/{quote(partition.local_name, safe='')}"
            f"{suffix}")


def same_request_suffix(request: web.Request) -> str:
    """What follows the topic in this request's path, with its query string."""
    canonical = request.match_info.route.resource.canonical if request.match_info.route.resource else ""
    _, _, after_topic = canonical.partition("{topic}")
    values = {key: urllib.parse.quote(value, safe="") for key, value in request.match_info.items()}
    suffix = after_topic.format_map(values)
    return suffix + (f"?{request.query_string}" if request.query_string else "")


async def call_each(request: web.Request, remote: Remote, method: str | None = None,
                    suffix: str | None = None, accept: tuple[int, ...] = (404,)
                    ) -> list[tuple[naming.TopicName, int, Any]]:
    """The request (or method + suffix) for each remote partition, on its broker.

    Returns (partition, status, JSON body or None); a status that is neither a
    success nor in accept fails the whole operation with the partition's reason.
    """
    service = rest.service(request)
    method = method or request.method
    suffix = same_request_suffix(request) if suffix is None else suffix
    body = await request.read() if method in ("PUT", "POST") else None
    answers = []
    for partition, owner in remote:
        status, data = await service.namespaces.call(method, owner, partition_path(partition, suffix),
                                                     body or None)
        parsed = _json(data)
        if status >= 300 and status not in accept:
            reason = parsed.get("reason") if isinstance(parsed, dict) else None
            error = errors.BrokerError(f"{partition}: {reason or data.decode(errors='replace')}")
            error.http_status = status
            raise error
        answers.append((partition, status, parsed))
    return answers


def _json(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None
