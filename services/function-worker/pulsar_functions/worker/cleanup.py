"""cleanupSubscription: deleting a function also deletes its input subscriptions.

Apache's worker removes the function's subscription from each of its input
topics when the function is deleted (cleanupSubscription, true by default),
so the topics do not keep a backlog for a consumer that will never come
back. The subscription can only go once no instance consumes from it (a
live instance would create it again), so this waits until the function has
no running instance left (the workers' runtime keys), then deletes the
subscription with force through the brokers' admin API. Topics given as a
pattern keep their subscriptions: the set of topics is not known here.
"""

from __future__ import annotations

import asyncio
import logging
import time
import urllib.parse

import aiohttp
from pulsar_common.metadata import api

from pulsar_functions import broker_client, config
from pulsar_functions.worker import records, state_topic

log = logging.getLogger(__name__)

#: How long a delete waits for the function's instances to stop before giving up on cleanup.
INSTANCES_STOP_WAIT_S = 30.0
POLL_INTERVAL_S = 0.2


async def wait_for_instances_to_stop(store: api.MetadataStore, fqfn: str,
                                     wait_s: float = INSTANCES_STOP_WAIT_S) -> bool:
    """True once no worker publishes a running instance of fqfn; False after wait_s."""
    deadline = time.monotonic() + wait_s
    while await store.get_children(f"{records.RUNTIME}/{fqfn}"):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(POLL_INTERVAL_S)
    return True


def subscription_url(web_service_url: str, topic: str, subscription: str) -> str:
    return (f"{state_topic.topic_url(web_service_url, topic)}/subscription/"
            f"{urllib.parse.quote(subscription, safe='')}")


async def delete_input_subscriptions(
        store: api.MetadataStore, web_service_url: str, function: config.FunctionConfig,
        client: broker_client.BrokerClientSettings = broker_client.ANONYMOUS,
) -> list[str]:
    """Delete the function's subscription on each input topic, as the worker's broker client
    (client); the topics cleaned up."""
    if not await wait_for_instances_to_stop(store, function.fqfn):
        log.warning("%s: instances still running after %.0f s; its input subscriptions are "
                    "left in place", function.fqfn, INSTANCES_STOP_WAIT_S)
        return []
    cleaned = []
    async with state_topic.admin_session(web_service_url, client) as session:
        for spec in function.inputs:
            if spec.is_pattern:
                continue
            url = subscription_url(web_service_url, spec.topic,
                                   function.effective_subscription_name)
            try:
                async with session.delete(url, params={"force": "true"}) as response:
                    if response.status in (200, 204, 404):
                        cleaned.append(spec.topic)
                    else:
                        log.warning("%s: deleting subscription on %s answered %s: %s",
                                    function.fqfn, spec.topic, response.status,
                                    (await response.text())[:200])
            except (TimeoutError, aiohttp.ClientError) as exc:
                log.warning("%s: cannot delete subscription on %s: %s",
                            function.fqfn, spec.topic, exc)
    return cleaned
