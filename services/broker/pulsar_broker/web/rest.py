"""Small helpers every route module shares: the service, names from the path, bodies, replies.

Apache Pulsar answers errors with JSON `{"reason": "..."}` and the status its
RestException carries; invalid names are 412 Precondition Failed. Successful
writes answer 204 No Content.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import http_limits

SERVICE = web.AppKey("broker_service", BrokerService)

DOMAINS = "{domain:persistent|non-persistent}"

#: Apache reads these fields as Java ints (long for JAVA_LONG_MAX); a bigger JSON number is
#: a 400 there (the body does not deserialize), never a value to store.
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1


class InvalidNameError(errors.BrokerError):
    """A tenant, namespace, cluster or topic name that Pulsar does not accept."""

    http_status = 412


class NotAcceptableError(errors.BrokerError):
    """A value Pulsar refuses with 406 (for example zero partitions)."""

    http_status = 406


def service(request: web.Request) -> BrokerService:
    return request.app[SERVICE]


def check_name(value: str, what: str) -> str:
    """Tenant and cluster names follow Apache's rule (letters, digits and -=:._ only), and
    are neither '.' nor '..' nor longer than naming.NAME_LENGTH_MAX."""
    if not naming.valid_name(value):
        raise InvalidNameError(f"{what} name is not valid")
    return value


def namespace_name(request: web.Request) -> naming.NamespaceName:
    tenant = request.match_info["tenant"]
    namespace = request.match_info["namespace"]
    try:
        return naming.NamespaceName.parse(f"{tenant}/{namespace}")
    except naming.InvalidTopicNameError as exc:
        raise InvalidNameError("Namespace name is not valid") from exc


def topic_name(request: web.Request) -> naming.TopicName:
    info = request.match_info
    try:
        return naming.TopicName.of(
            info.get("domain", "persistent"), info["tenant"], info["namespace"], info["topic"]
        )
    except naming.InvalidTopicNameError as exc:
        raise InvalidNameError("Topic name is not valid") from exc


async def body_json(request: web.Request, default: Any = None) -> Any:
    """The request's JSON body, or default when it has none."""
    raw = await http_limits.read_body(
        request, service(request).config.http_server_idle_timeout_millis / 1000)
    if not raw.strip():
        return default
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.InvalidRequestError(f"Request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        # Arrays or objects nested deeper than the decoder's recursion limit (a 1 MiB body
        # can hold 500,000 levels): no admin body nests more than a few.
        raise errors.InvalidRequestError("Request body is not valid JSON: nested too deeply") \
            from exc


def java_int(value: Any, what: str, highest: int = JAVA_INT_MAX) -> int:
    """value as Apache's JSON binding reads an int field: a number (a numeric string too)
    within the Java type's range; anything else is 400 Bad Request."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not -highest - 1 <= value <= highest:
        raise errors.InvalidRequestError(f"{what} must be an integer of at most {highest}")
    return value


def query_flag(request: web.Request, name: str, default: bool = False) -> bool:
    value = request.query.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("true", "1", "yes")


def query_int(request: web.Request, name: str, default: int) -> int:
    value = request.query.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise errors.InvalidRequestError(f"{name} must be an integer") from exc


def path_int(request: web.Request, name: str) -> int:
    try:
        return int(request.match_info[name])
    except ValueError as exc:
        raise errors.InvalidRequestError(f"{name} must be an integer") from exc


def ok_json(value: Any, status: int = 200) -> web.Response:
    return web.json_response(value, status=status, dumps=_dumps)


def no_content() -> web.Response:
    return web.Response(status=204)


def error_json(status: int, reason: str) -> web.Response:
    return web.json_response({"reason": reason}, status=status, dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value)
