"""Checks at create and update that a function's package URL names a package the brokers have.

The instances download `function://` (`sink://`, `source://`) packages from
the brokers' packages management service with the worker's broker client
credentials (instance/packages.py); asking for the package's metadata the
same way when the function is registered turns a misspelt or missing
package into a 400 for the caller, rather than instances that never start.
"""

from __future__ import annotations

import aiohttp

from pulsar_functions import broker_client, errors
from pulsar_functions.instance import packages
from pulsar_functions.worker import state_topic

CHECK_TIMEOUT_S = 10.0


async def check(web_service_url: str, location: str | None,
                client: broker_client.BrokerClientSettings) -> None:
    """FunctionCodeError unless location is no package URL or names an existing package."""
    if not location or not packages.is_package_url(location):
        return
    url = web_service_url.rstrip("/") + packages.rest_path(location) + "/metadata"
    try:
        async with state_topic.admin_session(web_service_url, client, CHECK_TIMEOUT_S) as session, \
                session.get(url) as response:
            if response.status == 200:
                return
            detail = (await response.text())[:300]
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise errors.FunctionCodeError(
            f"cannot reach the brokers at {web_service_url} to check {location}: {exc}") from exc
    raise errors.FunctionCodeError(
        f"package {location} is not available from {web_service_url}: HTTP "
        f"{response.status} {detail}")
