"""Applies namespace policies to the topics this broker has loaded, and keeps them applied.

A topic gets its namespace's policies when it is loaded (its managed ledger is
opened with the derived configuration). When a namespace's Policies record
changes, by an admin call on this broker or on another one (seen through a
watch on the metadata store), the new values go to that namespace's loaded
topics: retention and persistence through the managed ledger's configuration
(new ledgers use the new quorums; trimming follows the new retention), TTL
and backlog quotas through the topic's `policies`.

Five periodic checks act on them, as Apache's broker does: message expiry
(every messageExpiryCheckIntervalInMinutes, or messageExpiryCheckIntervalSeconds
when set), backlog quotas (every backlogQuotaCheckIntervalInSeconds),
compaction thresholds (every brokerServiceCompactionMonitorIntervalInSeconds),
inactive topics (every brokerDeleteInactiveTopicsFrequencySeconds; the
broker service deletes them through the `delete_topic` it hands in) and
expired subscriptions (every subscriptionExpiryCheckIntervalInMinutes, or
subscriptionExpiryCheckIntervalSeconds when set).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from pulsar_common import clock, naming
from pulsar_common.metadata import errors as md_errors
from pulsar_common.metadata import tasks

from pulsar_broker import config as broker_config
from pulsar_broker import errors, resources
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import backlog_quota, inactive_topics, message_expiry, policies
from pulsar_broker.topics.compaction import compactor
from pulsar_broker.topics.persistent_topic import PersistentTopic

log = logging.getLogger(__name__)

#: Pause before watching the policies again after the watch was lost or failed.
WATCH_RETRY_S = 1.0

#: A subscription of a topic, by their names.
SubscriptionKey = tuple[str, str]


class IdleSubscriptions:
    """Since when each durable subscription has had no consumer, as the periodic checks saw
    it: its last activity. Apache reads the cursor's last activity instead, so here a
    subscription may live up to one check interval longer, and a broker that loads the
    topic starts counting anew."""

    def __init__(self) -> None:
        self._idle_since_ms: dict[SubscriptionKey, int] = {}

    def expired(self, key: SubscriptionKey, has_consumers: bool, expiration_ms: int,
                now_ms: int) -> bool:
        """Whether the subscription has been without consumers for more than expiration_ms
        (0: subscriptions never expire)."""
        if has_consumers or expiration_ms <= 0:
            self._idle_since_ms.pop(key, None)
            return False
        since = self._idle_since_ms.setdefault(key, now_ms)
        return now_ms - since > expiration_ms

    def forget(self, key: SubscriptionKey) -> None:
        self._idle_since_ms.pop(key, None)

    def keep_only(self, keys: set[SubscriptionKey]) -> None:
        for gone in set(self._idle_since_ms) - keys:
            del self._idle_since_ms[gone]


class PolicyEnforcer:
    def __init__(self, conf: broker_config.BrokerConfig,
                 default_ledger: ml_config.ManagedLedgerConfig,
                 pulsar_resources: resources.PulsarResources,
                 loaded_topics: Callable[[], list[PersistentTopic]],
                 now_ms: clock.NowMs = clock.wall_clock_ms,
                 delete_topic: Callable[[naming.TopicName], Awaitable[None]] | None = None,
                 ) -> None:
        self.conf = conf
        #: Deletes an inactive topic (refusing, as the admin API does, one that has
        #: producers or consumers again); None: inactive topics are kept.
        self._delete_topic = delete_topic
        self._inactivity = inactive_topics.InactivityClock()
        self._idle_subscriptions = IdleSubscriptions()
        self.default_ledger = default_ledger
        self.resources = pulsar_resources
        self._loaded_topics = loaded_topics
        self._now_ms = now_ms
        self._tasks: list[asyncio.Task[None]] = []

    # -- resolution and application ------------------------------------------------

    async def policies_of(self, ns: naming.NamespaceName) -> policies.TopicPolicies:
        try:
            stored = await self.resources.get_policies(ns)
        except errors.NotFoundError:
            stored = None
        return policies.resolve(stored, self.conf, self.default_ledger)

    async def policies_of_topic(self, name: naming.TopicName) -> policies.TopicPolicies:
        """The namespace's policies with the topic's own (topic-level) values over them."""
        try:
            stored = await self.resources.get_policies(name.namespace_name)
        except errors.NotFoundError:
            stored = None
        overrides = await self.resources.get_topic_policies(_base_topic(name))
        return policies.resolve(policies.with_topic_overrides(stored, overrides), self.conf,
                                self.default_ledger)

    def ledger_config(self, topic_policies: policies.TopicPolicies) -> ml_config.ManagedLedgerConfig:
        return policies.ledger_config(self.default_ledger, topic_policies)

    def apply(self, topic: PersistentTopic, topic_policies: policies.TopicPolicies) -> None:
        if topic.policies.delayed != topic_policies.delayed:
            for subscription in list(topic.subscriptions.values()):
                subscription.update_delayed_settings(topic_policies.delayed)
        limit = topic_policies.limits.max_unacked_per_subscription
        if topic.policies.limits.max_unacked_per_subscription != limit:
            for subscription in list(topic.subscriptions.values()):
                subscription.update_max_unacked_messages(limit)
        newly_encrypted = topic_policies.encryption_required and not topic.policies.encryption_required
        topic.policies = topic_policies
        topic.ledger.update_config(self.ledger_config(topic_policies))
        if newly_encrypted and topic.refuses_unencrypted():
            topic.disconnect_unencrypted_producers()

    async def namespace_changed(self, ns: naming.NamespaceName) -> None:
        """Give the namespace's loaded topics its current policies."""
        topics = [t for t in self._loaded_topics() if t.name.namespace_name == ns]
        if not topics:
            return
        for topic in topics:
            await self._reapply(topic, await self.policies_of_topic(topic.name))

    async def topic_changed(self, name: naming.TopicName) -> None:
        """Give a topic (every loaded partition of it) its policies again."""
        base = _base_topic(name)
        for topic in self._loaded_topics():
            if _base_topic(topic.name) == base:
                await self._reapply(topic, await self.policies_of_topic(topic.name))

    async def _reapply(self, topic: PersistentTopic, topic_policies: policies.TopicPolicies) -> None:
        """apply, then switch deduplication on or off at once when that changed, as
        Apache's broker checks the deduplication status on a policy change."""
        self.apply(topic, topic_policies)
        if topic.closed or topic_policies.deduplication_enabled == (topic.deduplication is not None):
            return
        try:
            if topic_policies.deduplication_enabled:
                await topic.enable_deduplication()
            else:
                await topic.disable_deduplication()
        except Exception:
            log.exception("switching deduplication of %s failed", topic.name)

    # -- periodic checks -------------------------------------------------------------

    async def check_message_expiry(self) -> None:
        """Acknowledge, on each durable subscription, messages older than the topic's TTL."""
        now = self._now_ms()
        for topic in self._loaded_topics():
            ttl_s = topic.policies.message_ttl_s
            if ttl_s <= 0 or topic.closed:
                continue
            for subscription in list(topic.subscriptions.values()):
                if not subscription.durable:
                    continue
                try:
                    if await message_expiry.expire_before(subscription.cursor, now - ttl_s * 1000):
                        subscription.new_entries()
                except Exception:
                    log.exception("message expiry on %s/%s failed", topic.name, subscription.name)

    async def check_backlog_quotas(self) -> None:
        now = self._now_ms()
        for topic in self._loaded_topics():
            if topic.closed:
                continue
            try:
                await backlog_quota.enforce(topic, now)
            except Exception:
                log.exception("backlog quota check on %s failed", topic.name)

    async def check_compaction(self) -> None:
        """Compact topics whose compaction backlog is above their namespace's threshold."""
        for topic in self._loaded_topics():
            threshold = topic.policies.compaction_threshold_bytes
            if threshold <= 0 or topic.closed or topic.compaction is None:
                continue
            try:
                backlog = backlog_quota.estimated_backlog_size(topic.ledger.ledgers,
                                                               topic.compaction.horizon())
                if not topic.compaction.running and backlog > threshold:
                    log.info("%s: compaction backlog above %d bytes, compacting", topic.name,
                             threshold)
                    topic.compact()
            except Exception:
                log.exception("compaction check on %s failed", topic.name)

    async def check_inactive_topics(self) -> None:
        """Delete the topics inactive for longer than their inactiveTopicPolicies allow."""
        if self._delete_topic is None:
            return
        now = self._now_ms()
        loaded = [t for t in self._loaded_topics() if not t.closed]
        self._inactivity.keep_only({str(t.name) for t in loaded})
        for topic in loaded:
            if not self._inactivity.should_delete(str(topic.name), topic.policies.inactive,
                                                  _activity(topic), now):
                continue
            try:
                await self._delete_topic(topic.name)
                log.info("deleted inactive topic %s (%s)", topic.name,
                         topic.policies.inactive.mode)
            except errors.BrokerError as exc:
                # A producer or consumer came meanwhile: it is active again.
                log.info("inactive topic %s not deleted: %s", topic.name, exc)
            except Exception:
                log.exception("deleting inactive topic %s failed", topic.name)

    async def check_subscription_expiry(self) -> None:
        """Delete the durable subscriptions that have had no consumer for longer than their
        namespace's subscriptionExpirationTime, as Apache does; the compaction's
        `__compaction` subscription never expires."""
        now = self._now_ms()
        seen: set[SubscriptionKey] = set()
        for topic in [t for t in self._loaded_topics() if not t.closed]:
            expiration_ms = topic.policies.subscription_expiration_minutes * 60_000
            for subscription in list(topic.subscriptions.values()):
                if (not subscription.durable
                        or subscription.name == compactor.COMPACTION_SUBSCRIPTION):
                    continue
                key = (str(topic.name), subscription.name)
                seen.add(key)
                if self._idle_subscriptions.expired(key, bool(subscription.consumers),
                                                    expiration_ms, now):
                    await self._delete_expired(topic, subscription.name)
                    self._idle_subscriptions.forget(key)
        self._idle_subscriptions.keep_only(seen)

    @staticmethod
    async def _delete_expired(topic: PersistentTopic, name: str) -> None:
        try:
            await topic.unsubscribe(name)
            log.info("%s: deleted subscription %s, without consumers for more than %d minutes",
                     topic.name, name, topic.policies.subscription_expiration_minutes)
        except errors.BrokerError as exc:
            # A consumer came meanwhile (or an admin deleted it first).
            log.info("%s: expired subscription %s not deleted: %s", topic.name, name, exc)
        except Exception:
            log.exception("%s: deleting expired subscription %s failed", topic.name, name)

    # -- background tasks ----------------------------------------------------------

    def start(self) -> None:
        expiry_s = (self.conf.message_expiry_check_interval_seconds
                    or self.conf.message_expiry_check_interval_in_minutes * 60.0)
        self._spawn(self._every(expiry_s, self.check_message_expiry), "message-expiry")
        if self.conf.backlog_quota_check_enabled:
            self._spawn(self._every(float(self.conf.backlog_quota_check_interval_in_seconds),
                                    self.check_backlog_quotas), "backlog-quota")
        self._spawn(self._every(float(self.conf.broker_service_compaction_monitor_interval_in_seconds),
                                self.check_compaction), "compaction-monitor")
        self._spawn(self._every(float(self.conf.broker_delete_inactive_topics_frequency_seconds),
                                self.check_inactive_topics), "inactive-topics")
        subscriptions_s = (self.conf.subscription_expiry_check_interval_seconds
                           or self.conf.subscription_expiry_check_interval_in_minutes * 60.0)
        self._spawn(self._every(subscriptions_s, self.check_subscription_expiry),
                    "subscription-expiry")
        self._spawn(self._watch_policies(), "policies-watch")
        self._spawn(self._watch_topic_policies(), "topic-policies-watch")

    async def close(self) -> None:
        for task in self._tasks:
            await tasks.cancel_and_wait(task)
        self._tasks.clear()

    def _spawn(self, coroutine: Awaitable[None], name: str) -> None:
        self._tasks.append(asyncio.ensure_future(coroutine))
        self._tasks[-1].set_name(f"policies-{name}")

    @staticmethod
    async def _every(interval_s: float, check: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await check()

    async def _watch_policies(self) -> None:
        """Re-apply a namespace's policies whenever its record changes in the store (also
        when another broker's admin API changed it)."""
        while True:
            watch = self.resources.store.watch(resources.POLICIES, prefix=True)
            try:
                # Changes made before the watch started are picked up by this pass.
                await self._reapply_all()
                async for notification in watch:
                    ns = _namespace_of(notification.path)
                    if ns is not None:
                        await self.namespace_changed(ns)
                return
            except (md_errors.MetadataStoreError, errors.BrokerError) as exc:
                log.warning("watching namespace policies failed (%s); watching again", exc)
            finally:
                await watch.close()
            await asyncio.sleep(WATCH_RETRY_S)

    async def _watch_topic_policies(self) -> None:
        """Re-apply a topic's policies whenever its topic-level record changes."""
        while True:
            watch = self.resources.store.watch(resources.TOPIC_POLICIES, prefix=True)
            try:
                async for notification in watch:
                    name = _topic_of(notification.path)
                    if name is not None:
                        await self.topic_changed(name)
                return
            except (md_errors.MetadataStoreError, errors.BrokerError) as exc:
                log.warning("watching topic policies failed (%s); watching again", exc)
            finally:
                await watch.close()
            await asyncio.sleep(WATCH_RETRY_S)

    async def _reapply_all(self) -> None:
        for ns in {t.name.namespace_name for t in self._loaded_topics()}:
            await self.namespace_changed(ns)


def _activity(topic: PersistentTopic) -> inactive_topics.TopicActivity:
    subscriptions = list(topic.subscriptions.values())
    return inactive_topics.TopicActivity(
        producers=len(topic.producers),
        consumers=sum(len(s.consumers) for s in subscriptions),
        subscriptions=len(subscriptions),
        subscriptions_with_backlog=sum(
            1 for s in subscriptions if s.cursor.number_of_entries_in_backlog > 0))


def _namespace_of(path: str) -> naming.NamespaceName | None:
    """/admin/policies/<tenant>/<ns> names a namespace; other paths under it do not."""
    parts = path[len(resources.POLICIES):].strip("/").split("/")
    if len(parts) != 2:
        return None
    try:
        return naming.NamespaceName.parse("/".join(parts))
    except naming.InvalidTopicNameError:
        return None


def _base_topic(name: naming.TopicName) -> naming.TopicName:
    """Policies of a partitioned topic are the partitioned topic's, for every partition."""
    return name.partitioned_topic_name


def _topic_of(path: str) -> naming.TopicName | None:
    """/admin/topic-policies/<tenant>/<ns>/<domain>/<topic> names a topic."""
    parts = path[len(resources.TOPIC_POLICIES):].strip("/").split("/")
    if len(parts) != 4:
        return None
    tenant, namespace, domain, local = parts
    try:
        return naming.TopicName.of(domain, tenant, namespace, local)
    except naming.InvalidTopicNameError:
        return None
