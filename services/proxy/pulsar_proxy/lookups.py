"""The requests a proxy answers itself on a client's lookup connection.

PARTITIONED_METADATA, LOOKUP, GET_TOPICS_OF_NAMESPACE and GET_SCHEMA go to a
broker over the proxy's own connection, and the reply goes back with the
client's request id. A LOOKUP follows the brokers' redirects to the topic's
owner and then answers Connect with `proxy_through_service_url`, so the
client connects to the proxy again and asks to be relayed to that owner.
At most `maxConcurrentLookupRequests` of these are in flight; more are
refused at once with TooManyRequests, the client's cue to retry later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pulsar_common.wire import commands as replies
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_proxy import discovery as discovery_mod
from pulsar_proxy import errors, stats
from pulsar_proxy.broker_client import BrokerClientPool, body_of

log = logging.getLogger(__name__)
T = pb.BaseCommand
Lookup = pb.CommandLookupTopicResponse

#: Redirects a lookup may follow before it fails: more means brokers disagree on the owner.
MAX_LOOKUP_REDIRECTS = 8

#: Request type -> (the stats counter of its kind, how to answer it with an error).
_KINDS: dict[int, tuple[str, Callable[[int, int, str], pb.BaseCommand]]] = {
    T.LOOKUP: ("lookup", replies.lookup_failed),
    T.PARTITIONED_METADATA: ("partitions_metadata", replies.partitioned_metadata_failed),
    T.GET_TOPICS_OF_NAMESPACE: ("get_topics_of_namespace", replies.error),
    T.GET_SCHEMA: ("get_schema", replies.get_schema_error),
}
HANDLED = frozenset(_KINDS)


class LookupProxy:
    def __init__(self, discovery: discovery_mod.BrokerDiscovery, pool: BrokerClientPool,
                 max_in_flight: int, proxy_stats: stats.ProxyStats) -> None:
        self._discovery = discovery
        self._pool = pool
        self._max_in_flight = max_in_flight
        self._stats = proxy_stats
        self.in_flight = 0

    def admit(self, command: pb.BaseCommand) -> pb.BaseCommand | None:
        """Count the request in, or the TooManyRequests reply when the limit is reached."""
        kind, failed = _KINDS[command.type]
        self._stats.count_request(kind)
        if self.in_flight >= self._max_in_flight:
            self._stats.count_rejected_request(kind)
            return failed(body_of(command).request_id, pb.TooManyRequests,
                          "Failed due to too many pending lookup requests")
        self.in_flight += 1
        return None

    async def answer(self, command: pb.BaseCommand,
                     pool: BrokerClientPool | None = None) -> pb.BaseCommand:
        """The reply for a request that admit() let in, with the client's request id; sent
        over pool (a client's own broker connections) or the shared one."""
        client_id = body_of(command).request_id
        _, failed = _KINDS[command.type]
        pool = self._pool if pool is None else pool
        try:
            if command.type == T.LOOKUP:
                reply = await self._lookup(command, pool)
            else:
                url = await self._discovery.lookup_url()
                reply = await self._send(url, command, pool)
        except (errors.ProxyError, ValueError) as exc:
            log.info("%s for a client failed: %s", T.Type.Name(command.type), exc)
            return failed(client_id, pb.ServiceNotReady, str(exc))
        finally:
            self.in_flight -= 1
        body_of(reply).request_id = client_id
        return reply

    def _target(self, answer: pb.CommandLookupTopicResponse) -> str:
        """The broker URL of a lookup answer the proxy connects to: the TLS one with
        tlsEnabledWithBroker."""
        if not self._discovery.tls:
            return str(answer.brokerServiceUrl)
        if not answer.brokerServiceUrlTls:
            raise errors.BrokerUnavailableError(
                f"broker {answer.brokerServiceUrl} has no TLS port (tlsEnabledWithBroker)")
        return str(answer.brokerServiceUrlTls)

    async def _send(self, url: str, command: pb.BaseCommand,
                    pool: BrokerClientPool) -> pb.BaseCommand:
        host, port = discovery_mod.host_port(url)
        request = T()
        request.CopyFrom(command)
        return await pool.request(url, host, port, request)

    async def _lookup(self, command: pb.BaseCommand, pool: BrokerClientPool) -> pb.BaseCommand:
        url = await self._discovery.lookup_url()
        authoritative = command.lookupTopic.authoritative
        for _ in range(MAX_LOOKUP_REDIRECTS):
            request = T()
            request.CopyFrom(command)
            request.lookupTopic.authoritative = authoritative
            reply = await self._send(url, request, pool)
            if reply.type != T.LOOKUP_RESPONSE:
                return reply
            answer = reply.lookupTopicResponse
            if answer.response == Lookup.Connect:
                # As Apache's proxy: the address the proxy reaches the owner at, in both
                # fields, so a client over TLS or not asks to be relayed there.
                target = self._target(answer)
                return replies.lookup_response(
                    0, target, broker_service_url_tls=target, authoritative=True,
                    proxy_through_service_url=True)
            if answer.response != Lookup.Redirect:
                return reply
            url, authoritative = self._target(answer), answer.authoritative
        raise errors.BrokerUnavailableError(
            f"lookup of {command.lookupTopic.topic} redirected more than "
            f"{MAX_LOOKUP_REDIRECTS} times")
