"""Compaction of a function's state topic, asked of the brokers when the function is created.

Instances read their state from the topic's compacted view (instance/state.py),
so what a restart replays is bounded once the topic is compacted. The worker
sets the state topic's own compactionThreshold (a topic policy, as
`pulsar-admin topicPolicies set-compaction-threshold` would) through the
brokers' admin API with its broker client credentials, so the brokers compact
it whenever that many bytes were written after the last compaction. Best
effort: a broker that refuses (no rights, topic policies off) leaves state
correct, only replayed in full; the worker logs it.
"""

from __future__ import annotations

import logging
import urllib.parse

import aiohttp
from pulsar_common import naming

from pulsar_functions import broker_client, config

log = logging.getLogger(__name__)

HTTP_TIMEOUT_S = 30.0
#: The threshold call holds up the create's answer, so it gives up sooner.
THRESHOLD_TIMEOUT_S = 10.0


def admin_session(web_service_url: str, client: broker_client.BrokerClientSettings,
                  timeout_s: float = HTTP_TIMEOUT_S) -> aiohttp.ClientSession:
    """A session for the brokers' admin API, as the worker's broker client."""
    connector = (aiohttp.TCPConnector(ssl=client.http_ssl_context())
                 if web_service_url.startswith("https:") else None)
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s),
                                 connector=connector, headers=client.http_headers())


def topic_url(web_service_url: str, topic: str) -> str:
    name = naming.TopicName.parse(topic)
    quote = urllib.parse.quote
    return (f"{web_service_url.rstrip('/')}/admin/v2/{name.domain.value}/"
            f"{quote(name.tenant, safe='')}/{quote(name.namespace, safe='')}/"
            f"{quote(name.local_name, safe='')}")


async def set_compaction_threshold(web_service_url: str, function: config.FunctionConfig,
                                   threshold_bytes: int,
                                   client: broker_client.BrokerClientSettings) -> bool:
    """Set the compactionThreshold of function's state topic; whether the brokers took it."""
    url = topic_url(web_service_url, function.state_topic) + "/compactionThreshold"
    try:
        async with admin_session(web_service_url, client, THRESHOLD_TIMEOUT_S) as session, \
                session.post(url, json=threshold_bytes) as response:
            if response.status in (200, 204):
                return True
            log.warning("%s: setting the state topic's compaction threshold answered %s: %s",
                        function.fqfn, response.status, (await response.text())[:200])
    except (TimeoutError, aiohttp.ClientError) as exc:
        log.warning("%s: cannot set the state topic's compaction threshold: %s",
                    function.fqfn, exc)
    return False
