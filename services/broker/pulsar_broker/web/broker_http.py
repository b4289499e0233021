"""The aiohttp client the namespace service forwards requests and lookups with.

It fills the `pulsar_broker.namespace.forwarding.BrokerHttp` port: one
session, opened on first use, sending this broker's brokerClient
credentials; a request with no answer raises BrokerUnreachableError.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from pulsar_broker import config as broker_config
from pulsar_broker.namespace import forwarding
from pulsar_broker.security import guard as security_guard


class BrokerHttpClient:
    def __init__(self, headers: Mapping[str, str],
                 timeout_s: float = forwarding.FORWARD_TIMEOUT_S) -> None:
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers=self._headers, timeout=aiohttp.ClientTimeout(total=self._timeout_s))
        return self._session

    async def request(self, method: str, url: str, *, body: bytes | None = None,
                      params: Mapping[str, str] | None = None,
                      follow_redirects: bool = True) -> forwarding.Reply:
        headers = {"Content-Type": "application/json"} if body else None
        try:
            async with self._open().request(method, url, data=body, headers=headers,
                                            params=params,
                                            allow_redirects=follow_redirects) as reply:
                return forwarding.Reply(reply.status, await reply.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise forwarding.BrokerUnreachableError(exc) from exc

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def for_broker(config: broker_config.BrokerConfig) -> BrokerHttpClient:
    """The client of a broker configured so (its brokerClient authentication)."""
    return BrokerHttpClient(security_guard.broker_client_headers(config))
