"""Dynamic broker configuration: `/admin/v2/brokers/configuration...` (pulsar-admin brokers
update-dynamic-config and friends).

Apache marks some broker.conf keys dynamic: an admin may change them while
brokers run, and every broker of the cluster applies the new value. The
values are kept in the metadata store at /admin/configuration, one JSON map
of key -> value text (Apache's path and shape); each broker watches it and
rebuilds its settings from broker.conf's with the stored values over them.
A key Apache does not mark dynamic, or one this broker cannot apply while it
runs, is refused with Apache's 412.

Which keys are dynamic here, and what changing one does, is DYNAMIC_KEYS.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aiohttp import web
from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import config as broker_config
from pulsar_broker import errors
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

log = logging.getLogger(__name__)

routes = web.RouteTableDef()

#: Apache's BROKER_SERVICE_CONFIGURATION_PATH.
STORE_PATH = "/admin/configuration"
#: Pause before watching the stored values again after the watch failed.
WATCH_RETRY_S = 1.0

#: Keys that change at runtime (all are dynamic in Apache too), with what changing one does.
DYNAMIC_KEYS: Mapping[str, str] = {
    "dispatchThrottlingRateInMsg": "the dispatch rate of the broker, over all its topics",
    "dispatchThrottlingRateInByte": "the dispatch rate of the broker, over all its topics",
    "dispatchThrottlingRatePerTopicInMsg": "the dispatch rate of topics whose policies set none",
    "dispatchThrottlingRatePerTopicInByte": "the dispatch rate of topics whose policies set none",
    "dispatchThrottlingRatePerSubscriptionInMsg":
        "the dispatch rate of subscriptions whose policies set none",
    "dispatchThrottlingRatePerSubscriptionInByte":
        "the dispatch rate of subscriptions whose policies set none",
    "maxPublishRatePerTopicInMessages": "the publish rate of topics whose policies set none",
    "maxPublishRatePerTopicInBytes": "the publish rate of topics whose policies set none",
    "subscribeThrottlingRatePerConsumer": "the subscribe rate of topics whose policies set none",
    "subscribeRatePeriodPerConsumerInSecond": "the period of that subscribe rate",
    "dispatcherMaxReadBatchSize": "entries per read of every subscription, from its next read",
    "dispatcherMaxReadSizeBytes": "bytes per read of every subscription, from its next read",
    "maxNumPartitionsPerPartitionedTopic": "checked by the next create or update of partitions",
}

#: Settings /configuration/runtime leaves out: credentials, not settings to show.
_SECRET = re.compile(r"secret|password|authenticationparameters", re.IGNORECASE)


def parse_overrides(base: broker_config.BrokerConfig,
                    stored: Mapping[str, str]) -> broker_config.BrokerConfig:
    """base with the stored dynamic values over it; raises ConfigError for a value that
    does not read as its setting's type or that the settings' checks refuse."""
    fields = common_config.keys_of(broker_config.BrokerConfig)
    changes: dict[str, Any] = {}
    for key, raw in stored.items():
        if key not in DYNAMIC_KEYS:
            continue
        field = fields[key]
        kind = type(getattr(base, field.name))
        try:
            changes[field.name] = kind(raw) if kind is not bool else raw.lower() == "true"
        except ValueError as exc:
            raise common_errors.ConfigError(f"{key}: cannot read {raw!r}") from exc
    return dataclasses.replace(base, **changes)


def runtime_values(conf: broker_config.BrokerConfig) -> dict[str, str]:
    """Every setting as Apache's runtime configuration lists it: key -> value text."""
    values = common_config.read_properties(common_config.render(conf))
    return {key: value for key, value in values.items() if not _SECRET.search(key)}


class DynamicConfiguration:
    """This broker's view of the stored values: applies them to the service as they change."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        #: broker.conf's settings, before any stored value.
        self.base = service.config
        self.applied: dict[str, str] = {}

    @property
    def store(self) -> md.MetadataStore:
        return self.service.resources.store

    async def stored(self) -> dict[str, str]:
        found = await self.store.get(STORE_PATH)
        return {} if found is None else {str(k): str(v) for k, v in json.loads(found.value).items()}

    async def update(self, change: Mapping[str, str | None]) -> None:
        """Set (or with None, remove) stored values, compare-and-set against the stored map."""
        while True:
            found = await self.store.get(STORE_PATH)
            current = {} if found is None else dict(json.loads(found.value))
            for key, value in change.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            version = md.VERSION_ABSENT if found is None else found.stat.version
            try:
                await self.store.put(STORE_PATH, json.dumps(current, sort_keys=True).encode(),
                                     version)
            except (md_errors.BadVersionError, md_errors.AlreadyExistsError):
                continue  # another admin call changed it meanwhile: apply ours to theirs
            break
        await self.reload()

    async def reload(self) -> None:
        """Apply what is stored now (skipping what this broker cannot read)."""
        stored = await self.stored()
        if stored == self.applied:
            return
        try:
            conf = parse_overrides(self.base, stored)
        except common_errors.ConfigError as exc:
            log.warning("ignoring the stored dynamic configuration: %s", exc)
            return
        self.applied = stored
        await self._apply(conf)

    async def _apply(self, conf: broker_config.BrokerConfig) -> None:
        service = self.service
        service.config = conf
        service.policies.conf = conf
        for topic in service.loaded_topics:
            topic.max_read_batch = conf.dispatcher_max_read_batch_size
            topic.max_read_bytes = conf.dispatcher_max_read_size_bytes
            for subscription in topic.subscriptions.values():
                subscription.dispatcher.max_read_batch = conf.dispatcher_max_read_batch_size
                subscription.dispatcher.max_read_bytes = conf.dispatcher_max_read_size_bytes
        # Policy defaults (rates) come from the settings: every loaded topic resolves again.
        for ns in {topic.name.namespace_name for topic in service.loaded_topics}:
            await service.policies.namespace_changed(ns)
        log.info("dynamic configuration applied: %s", self.applied)

    async def watch(self) -> None:
        """Apply the stored values now and whenever any broker changes them."""
        while True:
            watch = self.store.watch(STORE_PATH)
            try:
                await self.reload()
                async for _notification in watch:
                    await self.reload()
                return
            except (md_errors.MetadataStoreError, errors.BrokerError) as exc:
                log.warning("watching the dynamic configuration failed (%s); watching again", exc)
            finally:
                await watch.close()
            await asyncio.sleep(WATCH_RETRY_S)


DYNAMIC = web.AppKey("dynamic_configuration", DynamicConfiguration)


def install(app: web.Application, service: BrokerService) -> None:
    """Give app the broker's DynamicConfiguration, watched while the app runs."""
    dynamic = DynamicConfiguration(service)
    app[DYNAMIC] = dynamic

    async def watching(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(dynamic.watch(), name="dynamic-configuration-watch")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(watching)


def _name(request: web.Request) -> str:
    return request.match_info["name"]


@routes.get("/admin/v2/brokers/configuration")
async def dynamic_names(request: web.Request) -> web.Response:
    return rest.ok_json(sorted(DYNAMIC_KEYS))


@routes.get("/admin/v2/brokers/configuration/values")
async def stored_values(request: web.Request) -> web.Response:
    return rest.ok_json(await request.app[DYNAMIC].stored())


@routes.get("/admin/v2/brokers/configuration/runtime")
async def runtime_configuration(request: web.Request) -> web.Response:
    return rest.ok_json(runtime_values(rest.service(request).config))


@routes.post("/admin/v2/brokers/configuration/{name}/{value}")
async def update_value(request: web.Request) -> web.Response:
    name, value = _name(request), request.match_info["value"]
    dynamic = request.app[DYNAMIC]
    if name in DYNAMIC_KEYS:
        try:
            parse_overrides(dynamic.base, {name: value})
        except common_errors.ConfigError as exc:
            raise errors.PreconditionFailedError("Invalid dynamic-config value") from exc
    else:
        raise errors.PreconditionFailedError("Can't update non-dynamic configuration")
    await dynamic.update({name: value})
    return rest.no_content()


@routes.delete("/admin/v2/brokers/configuration/{name}")
async def delete_value(request: web.Request) -> web.Response:
    name = _name(request)
    if name not in DYNAMIC_KEYS:
        raise errors.PreconditionFailedError("Can't delete non-dynamic configuration")
    await request.app[DYNAMIC].update({name: None})
    return rest.no_content()
