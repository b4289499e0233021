"""The non-persistent topics a broker has loaded, by name (in memory only)."""

from __future__ import annotations

from collections.abc import Callable

from pulsar_common import naming

from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic


class NonPersistentTopics:
    def __init__(self) -> None:
        self._topics: dict[str, NonPersistentTopic] = {}

    def get(self, name: naming.TopicName) -> NonPersistentTopic | None:
        return self._topics.get(str(name))

    def create(self, name: naming.TopicName) -> NonPersistentTopic:
        """The topic, created when it is not loaded yet."""
        topic = self._topics.get(str(name))
        if topic is None:
            topic = self._topics[str(name)] = NonPersistentTopic(name)
        return topic

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
