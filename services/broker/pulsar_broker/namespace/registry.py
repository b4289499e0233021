"""Live brokers: each registers an ephemeral key `/loadbalance/brokers/<host>:<webPort>`.

The key lives as long as the broker's metadata session, so the children of
/loadbalance/brokers are the brokers that can take bundles; the value says
how to reach the broker (Apache's keys webServiceUrl / pulsarServiceUrl).
"""

from __future__ import annotations

import json

from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker.namespace import listeners
from pulsar_broker.namespace.ownership import BrokerUrls

BROKERS_ROOT = "/loadbalance/brokers"


async def register(store: md.MetadataStore, broker_id: str, urls: BrokerUrls, cluster: str,
                   version: str) -> None:
    """Create this broker's key (replacing one left by its previous life)."""
    path = f"{BROKERS_ROOT}/{broker_id}"
    value = json.dumps({"webServiceUrl": urls.http_url, "pulsarServiceUrl": urls.native_url,
                        "webServiceUrlTls": urls.http_url_tls,
                        "pulsarServiceUrlTls": urls.native_url_tls,
                        "cluster": cluster, "brokerVersionString": version,
                        "advertisedListeners": listeners.to_json(urls.listeners)}).encode()
    try:
        await store.delete(path)
    except md_errors.NotFoundError:
        pass
    await store.put(path, value, md.VERSION_ABSENT, ephemeral=True)


async def live_brokers(store: md.MetadataStore) -> dict[str, BrokerUrls]:
    """Broker id -> URLs of every registered broker."""
    brokers = {}
    for broker_id in await store.get_children(BROKERS_ROOT):
        found = await store.get(f"{BROKERS_ROOT}/{broker_id}")
        if found is not None:
            value = json.loads(found.value)
            brokers[broker_id] = BrokerUrls(value["pulsarServiceUrl"], value["webServiceUrl"],
                                            listeners.from_json(value.get("advertisedListeners")),
                                            value.get("pulsarServiceUrlTls") or None,
                                            value.get("webServiceUrlTls") or None)
    return brokers
