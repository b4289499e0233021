"""`/admin/v2/persistent/{tenant}/{namespace}/...`: topics, partitioned topics and their stats."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pulsar_common import naming
from pulsar_common.wire import entry_info

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics import persistent_topic
from pulsar_broker.web import (
    rates,
    remote_partitions,
    rest,
    stats,
    topic_access,
    topic_properties,
)

routes = web.RouteTableDef()

NS = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}"
TOPIC = NS + "/{topic}"


def _partition_count(body: Any, highest: int) -> int:
    """The body is a number (a Java int); a PartitionedTopicMetadata object is accepted too.
    highest is maxNumPartitionsPerPartitionedTopic (0: no limit)."""
    if isinstance(body, dict) and "partitions" in body:
        body = body["partitions"]
    count = rest.java_int(body, "The number of partitions")
    if count <= 0:
        raise rest.NotAcceptableError("Number of partitions should be more than 0")
    if highest and count > highest:
        raise rest.NotAcceptableError(
            f"Number of partitions should be less than or equal to {highest}")
    return count


def _without_system_topics(request: web.Request, names: list[str]) -> list[str]:
    """Apache's includeSystemTopic (default false): the broker's own topics are left out."""
    if rest.query_flag(request, "includeSystemTopic"):
        return names
    return [n for n in names if not persistent_topic.is_system_topic(naming.TopicName.parse(n))]


@routes.get(NS)
async def list_topics(request: web.Request) -> web.Response:
    """?bundle=0x..._0x... keeps the topics of that bundle only."""
    ns = rest.namespace_name(request)
    service = rest.service(request)
    await service.check_namespace(ns)
    mode = "PERSISTENT" if request.match_info["domain"] == "persistent" else "NON_PERSISTENT"
    names = _without_system_topics(request, await service.topics_of_namespace(ns, mode))
    bundle = request.query.get("bundle")
    if bundle:
        names = [n for n in names
                 if (await service.namespaces.bundle_of(naming.TopicName.parse(n))).range == bundle]
    return rest.ok_json(names)


@routes.get(NS + "/partitioned")
async def list_partitioned_topics(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    service = rest.service(request)
    await service.check_namespace(ns)
    domain = request.match_info["domain"]
    names = await service.resources.list_partitioned_topics(ns, domain)
    return rest.ok_json(_without_system_topics(request, names))


@routes.put(TOPIC)
async def create_non_partitioned_topic(request: web.Request) -> web.Response:
    """The body may hold the topic's properties (a JSON object of strings)."""
    name = rest.topic_name(request)
    service = rest.service(request)
    properties = topic_properties.properties_body(await rest.body_json(request))
    topic_access.check_persistent(name)
    await service.check_namespace(name.namespace_name)
    parent = name.partitioned_topic_name
    if (await service.resources.get_partitions(name) > 0 or await service.topic_exists(name)
            or (parent != name and await service.resources.get_partitions(parent) > 0)):
        raise errors.ConflictError("This topic already exists")
    await service.check_topics_limit(name, 1)  # 412 past maxTopicsPerNamespace, as Apache
    await topic_access.create(service, name)
    if properties:
        await topic_properties.add_topic_properties(service, name, properties)
    return rest.no_content()


@routes.delete(TOPIC)
async def delete_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await topic_access.existing(service, name)
    await service.delete_topic(name, force=rest.query_flag(request, "force"))
    await topic_properties.delete_record(service, name)
    if name.partition_index < 0:
        # As Apache does, the topic's schema goes with it (a partition's belongs to its
        # partitioned topic and goes when that is deleted).
        await service.schemas.delete(name, force=True)
    return rest.no_content()


@routes.put(TOPIC + "/partitions")
async def create_partitioned_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    body = await rest.body_json(request)
    count = _partition_count(body, service.config.max_num_partitions_per_partitioned_topic)
    properties = topic_properties.properties_body(
        body.get("properties") if isinstance(body, dict) else None)
    if name.partition_index >= 0:
        raise errors.PreconditionFailedError(
            "Partitioned topic name must not contain the -partition- suffix")
    await service.check_namespace(name.namespace_name)
    if await service.topic_exists(name):
        raise errors.ConflictError("This topic already exists")
    await service.check_topics_limit(name, count)  # each partition counts as a topic
    try:
        await service.resources.create_partitioned_topic(name, count)
    except errors.ConflictError as exc:
        raise errors.ConflictError("This topic already exists") from exc
    if properties:
        await topic_properties.add_topic_properties(service, name, properties)
    return rest.no_content()


@routes.post(TOPIC + "/partitions")
async def update_partitioned_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    count = _partition_count(await rest.body_json(request),
                             service.config.max_num_partitions_per_partitioned_topic)
    current = await service.resources.get_partitions(name)
    if current == 0:
        raise errors.NotFoundError("Partitioned topic does not exist")
    if count <= current:
        raise errors.ConflictError(
            "Number of new partitions must be greater than existing number of partitions")
    await service.resources.update_partitioned_topic(name, count)
    return rest.no_content()


@routes.get(TOPIC + "/partitions")
async def get_partitioned_metadata(request: web.Request) -> web.Response:
    """Used by the clients' HTTP lookup too, with checkAllowAutoCreation=true."""
    name = rest.topic_name(request)
    service = rest.service(request)
    auto_create = rest.query_flag(request, "checkAllowAutoCreation")
    if not auto_create:
        await service.check_namespace(name.namespace_name)
    partitions = await service.partitioned_metadata(name, auto_create)
    return rest.ok_json({"partitions": partitions})


@routes.post(TOPIC + "/createMissedPartitions")
async def create_missed_partitions(request: web.Request) -> web.Response:
    """Create the partitions of a partitioned topic that do not exist yet (each on the
    broker serving it). Sent for one partition, as this broker does to the others,
    it creates that partition."""
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    count = await service.resources.get_partitions(name.partitioned_topic_name)
    if count == 0 or name.partition_index >= count:
        raise errors.NotFoundError(f"Topic {name} does not exist")
    if name.partition_index >= 0:
        await topic_access.create(service, name)
        return rest.no_content()
    parts = await topic_access.fan_out(service, name, create_partitions=True)
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


@routes.delete(TOPIC + "/partitions")
async def delete_partitioned_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    force = rest.query_flag(request, "force")
    count = await service.resources.get_partitions(name)
    if count == 0:
        raise errors.NotFoundError("Partitioned topic does not exist")
    for index in range(count):
        partition = name.partition(index)
        if not name.persistent:
            await service.non_persistent.remove(partition, force)
        elif await service.topic_exists(partition):
            await service.delete_topic(partition, force=force)
        await topic_properties.delete_record(service, partition)
    await service.resources.delete_partitioned_topic(name)
    await topic_properties.delete_record(service, name)
    await service.schemas.delete(name, force=True)
    return rest.no_content()


@routes.get(TOPIC + "/stats")
async def topic_stats(request: web.Request) -> web.Response:
    service = rest.service(request)
    name = rest.topic_name(request)
    if not name.persistent:
        result = stats.topic_stats(await topic_access.non_persistent(service, name),
                                   request.app[rates.TRACKER_KEY], service.broker_id)
        stats.apply_exclusions(result, stats.StatsOptions.of(request))
        return rest.ok_json(result)
    topic = await topic_access.existing(service, name)
    result = stats.topic_stats(topic, request.app[rates.TRACKER_KEY], service.broker_id)
    await stats.add_backlog_details(topic, result, stats.StatsOptions.of(request))
    return rest.ok_json(result)


@routes.get(TOPIC + "/partitioned-stats")
async def partitioned_stats(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    count = await service.resources.get_partitions(name)
    if count == 0:
        raise errors.NotFoundError("Partitioned Topic not found")
    per_partition = rest.query_flag(request, "perPartition", default=True)
    options = stats.StatsOptions.of(request)
    tracker = request.app[rates.TRACKER_KEY]
    if not name.persistent:
        loaded = [service.non_persistent.get(name.partition(i)) for i in range(count)]
        each = {str(t.name): stats.topic_stats(t, tracker) for t in loaded if t is not None}
        for part in each.values():
            stats.apply_exclusions(part, options)
        return rest.ok_json(stats.partitioned_stats(count, each, per_partition))
    parts = await topic_access.fan_out(service, name)
    each = {}
    for topic in parts.local:
        each[str(topic.name)] = stats.topic_stats(topic, tracker)
        await stats.add_backlog_details(topic, each[str(topic.name)], options)
    for partition, _, remote in await remote_partitions.call_each(
            request, parts.remote, "GET", "/stats" + options.query(), accept=()):
        each[str(partition)] = remote
    return rest.ok_json(stats.partitioned_stats(count, each, per_partition))


@routes.get(TOPIC + "/internalStats")
async def internal_stats(request: web.Request) -> web.Response:
    service = rest.service(request)
    topic = await topic_access.existing(service, rest.topic_name(request))
    result = stats.internal_stats(topic)
    if rest.query_flag(request, "metadata", default=False):
        await stats.add_ledger_metadata(service, result)
    return rest.ok_json(result)


@routes.get(TOPIC + "/partitioned-internalStats")
async def partitioned_internal_stats(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    count = await service.resources.get_partitions(name)
    if count == 0:
        raise errors.NotFoundError("Partitioned Topic not found")
    parts = await topic_access.fan_out(service, name)
    each = {str(t.name): stats.internal_stats(t) for t in parts.local}
    for partition, _, remote in await remote_partitions.call_each(
            request, parts.remote, "GET", "/internalStats", accept=()):
        each[str(partition)] = remote
    return rest.ok_json({"metadata": {"partitions": count}, "partitions": dict(sorted(each.items()))})


@routes.get(TOPIC + "/lastMessageId")
async def last_message_id(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await topic_access.refuse_partitioned(service, name, "Get the last message id")
    topic = await topic_access.existing(service, name)
    last = topic.ledger.last_confirmed_entry
    reply: dict[str, Any] = {"ledgerId": last.ledger_id, "entryId": last.entry_id,
                             "partitionIndex": name.partition_index}
    if last.entry_id >= 0:
        entry = await topic.ledger.read_entry(last)
        metadata = entry_info.parse_metadata(entry.data)
        if metadata.HasField("num_messages_in_batch"):
            reply["batchIndex"] = metadata.num_messages_in_batch - 1
    return rest.ok_json(reply)


@routes.put(TOPIC + "/unload")
async def unload_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    parts = await topic_access.fan_out(service, name)
    for topic in parts.local:
        await service.unload_topic(topic.name)
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


@routes.post(TOPIC + "/terminate")
async def terminate_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await topic_access.refuse_partitioned(service, name, "Termination")
    topic = await topic_access.existing(service, name)
    return rest.ok_json(_terminated_at(await topic.ledger.terminate(), name.partition_index))


def _terminated_at(last: ml.Position, partition_index: int) -> dict[str, int]:
    return {"ledgerId": last.ledger_id, "entryId": last.entry_id, "partitionIndex": partition_index}


@routes.post(TOPIC + "/terminate/partitions")
async def terminate_partitioned_topic(request: web.Request) -> web.Response:
    """Terminate every partition (creating those never used, as Apache does); answers
    {partition index: last message id}."""
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    if await topic_access.partitions_of(service, name) == 0:
        raise errors.NotAllowedError(
            "Termination of a non-partitioned topic is not allowed using partitioned-terminate, "
            "please use terminate commands.")
    parts = await topic_access.fan_out(service, name, create_partitions=True)
    ends: dict[int, Any] = {}
    for topic in parts.local:
        ends[topic.name.partition_index] = _terminated_at(await topic.ledger.terminate(),
                                                          topic.name.partition_index)
    for partition, _, remote in await remote_partitions.call_each(
            request, parts.remote, "POST", "/terminate", accept=()):
        ends[partition.partition_index] = remote
    return rest.ok_json({str(index): ends[index] for index in sorted(ends)})


@routes.get(TOPIC + "/compaction")
async def compaction_status(request: web.Request) -> web.Response:
    """Apache's LongRunningProcessStatus of the topic's last compaction on this broker."""
    topic = await topic_access.existing(rest.service(request), rest.topic_name(request))
    compaction = topic.compaction
    if compaction is None:
        return rest.ok_json({"status": "NOT_RUN", "lastError": ""})
    return rest.ok_json({"status": compaction.status.value, "lastError": compaction.last_error})


@routes.put(TOPIC + "/compaction")
async def trigger_compaction(request: web.Request) -> web.Response:
    """Start compacting (409 while a compaction runs); answers at once, as Apache does. On a
    partitioned topic, each partition that exists is compacted (on the broker serving it)."""
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    parts = await topic_access.fan_out(service, name)
    for topic in parts.local:
        topic.compact()
    await remote_partitions.call_each(request, parts.remote)
    return rest.no_content()
