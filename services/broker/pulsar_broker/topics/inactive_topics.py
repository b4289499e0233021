"""Inactive-topic deletion: which loaded topics have been inactive long enough to delete.

As Apache's broker does (brokerDeleteInactiveTopics* of broker.conf, overridden by a
namespace's or topic's inactiveTopicPolicies), a topic is active while it has a producer
or a consumer, and, by the delete mode, while it has any subscription
(delete_when_no_subscriptions) or a subscription with a backlog
(delete_when_subscriptions_caught_up). A topic inactive for longer than the policy's
duration is deleted by the periodic check in policy_enforcer.py. Pure: the check passes
what it saw of each topic and the time.
"""

from __future__ import annotations

import dataclasses

NO_SUBSCRIPTIONS = "delete_when_no_subscriptions"
SUBSCRIPTIONS_CAUGHT_UP = "delete_when_subscriptions_caught_up"


@dataclasses.dataclass(frozen=True)
class InactiveTopicPolicy:
    """Apache's InactiveTopicPolicies as they apply to one topic."""

    delete_while_inactive: bool = False
    mode: str = NO_SUBSCRIPTIONS
    max_inactive_s: int = 60


@dataclasses.dataclass(frozen=True)
class TopicActivity:
    """What the check saw of a topic."""

    producers: int
    consumers: int
    subscriptions: int
    #: Subscriptions with entries not yet acknowledged.
    subscriptions_with_backlog: int


def is_active(activity: TopicActivity, mode: str) -> bool:
    if activity.producers or activity.consumers:
        return True
    if mode == SUBSCRIPTIONS_CAUGHT_UP:
        return activity.subscriptions_with_backlog > 0
    return activity.subscriptions > 0


class InactivityClock:
    """Since when each topic has been inactive, by name; forgets topics it no longer sees."""

    def __init__(self) -> None:
        self._inactive_since_ms: dict[str, int] = {}

    def should_delete(self, topic: str, policy: InactiveTopicPolicy, activity: TopicActivity,
                      now_ms: int) -> bool:
        if not policy.delete_while_inactive or is_active(activity, policy.mode):
            self._inactive_since_ms.pop(topic, None)
            return False
        since = self._inactive_since_ms.setdefault(topic, now_ms)
        return now_ms - since >= policy.max_inactive_s * 1000

    def keep_only(self, topics: set[str]) -> None:
        for gone in set(self._inactive_since_ms) - topics:
            del self._inactive_since_ms[gone]
