"""The non-persistent topics a broker has loaded, by name (in memory only).

A topic with neither producers nor subscriptions is forgotten once it has
been so for INACTIVE_AFTER_S, as Apache's broker deletes inactive topics
(brokerDeleteInactiveTopicsEnabled, every 60 s by default): nothing would be
lost, and the registry never grows with names nobody uses any more. The sweep
runs when a topic is created, at most once per INACTIVE_AFTER_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pulsar_common import naming

from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic

#: Seconds a topic stays loaded without producers and subscriptions.
INACTIVE_AFTER_S = 60.0


class NonPersistentTopics:
    def __init__(self, now_s: Callable[[], float] = time.monotonic) -> None:
        self._topics: dict[str, NonPersistentTopic] = {}
        self._now_s = now_s
        self._last_sweep_s = now_s()
        #: Topics found idle by the previous sweep.
        self._idle: set[str] = set()

    def get(self, name: naming.TopicName) -> NonPersistentTopic | None:
        return self._topics.get(str(name))

    def create(self, name: naming.TopicName) -> NonPersistentTopic:
        """The topic, created when it is not loaded yet."""
        self._sweep()
        topic = self._topics.get(str(name))
        if topic is None:
            topic = self._topics[str(name)] = NonPersistentTopic(name)
        return topic

    def _sweep(self) -> None:
        """Forget the topics idle now and at the previous sweep (at least INACTIVE_AFTER_S
        ago)."""
        now = self._now_s()
        if now - self._last_sweep_s < INACTIVE_AFTER_S:
            return
        idle = {key for key, topic in self._topics.items()
                if not topic.producers and not topic.subscriptions}
        for key in idle & self._idle:
            self._topics.pop(key).closed = True
        self._idle = idle - self._idle
        self._last_sweep_s = now

    @property
    def loaded(self) -> list[NonPersistentTopic]:
        return list(self._topics.values())

    async def remove(self, name: naming.TopicName, force: bool = False) -> bool:
        """Delete a topic; False when it is not loaded here."""
        topic = self._topics.get(str(name))
        if topic is None:
            return False
        await topic.delete(force)
        self._topics.pop(str(name), None)
        return True

    async def close_where(self, condition: Callable[[naming.TopicName], bool]) -> None:
        """Close (unload) the topics whose name meets condition; their clients reconnect."""
        for key, topic in list(self._topics.items()):
            if condition(topic.name):
                self._topics.pop(key, None)
                await topic.close()
