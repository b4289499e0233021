"""Which owned bundle each loaded topic falls into, for the load report.

A topic's bundle only changes when this broker's owned bundles change (a
split, an unload, a bundle taken or released), so a TopicPlacement finds it
once per topic and keeps it until the owned set differs from the one it was
found against; then every topic is placed again. Between changes a load
report over 10,000 idle topics costs a dict lookup per topic, where a search
of the owned bundles and a CRC32 of the topic's name per topic per report
was most of an idle broker's CPU (issue 16).

The bundle found is the first owned bundle, in the owned list's order, of the
topic's namespace that holds the topic's hash: what a search of the whole
list finds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulsar_common import naming

from pulsar_broker.namespace import bundles as namespace_bundles


class TopicPlacement:
    def __init__(self) -> None:
        self._owned: tuple[namespace_bundles.NamespaceBundle, ...] = ()
        self._by_namespace: dict[naming.NamespaceName,
                                 list[namespace_bundles.NamespaceBundle]] = {}
        #: id(topic) -> (the topic, its name, its bundle's name or None).
        self._topics: dict[int, tuple[Any, str, str | None]] = {}
        #: id(topic) -> the pass that placed it last (apart, so a pass stores nothing new).
        self._placed_in: dict[int, int] = {}
        self._pass = 0
        self._observed = 0

    def update(self, owned: Sequence[namespace_bundles.NamespaceBundle]) -> None:
        """The bundles owned now; when they differ from the last ones, topics are placed again."""
        owned = tuple(owned)
        if owned == self._owned:
            return
        self._owned = owned
        self._by_namespace = {}
        for bundle in owned:
            self._by_namespace.setdefault(bundle.namespace, []).append(bundle)
        self._topics.clear()

    def place(self, topic: Any) -> tuple[str, str | None]:
        """The topic's name and the name of the owned bundle that holds it (None: not owned)."""
        key = id(topic)
        entry = self._topics.get(key)
        if entry is None or entry[0] is not topic:
            entry = self._topics[key] = (topic, str(topic.name), self._find(topic.name))
        if self._placed_in.get(key) != self._pass:
            self._placed_in[key] = self._pass
            self._observed += 1
        return entry[1], entry[2]

    def _find(self, topic_name: naming.TopicName) -> str | None:
        candidates = self._by_namespace.get(topic_name.namespace_name)
        if not candidates:
            return None
        hash_code = namespace_bundles.topic_hash(topic_name)
        return next((str(b) for b in candidates if b.holds(hash_code)), None)

    def end_pass(self) -> None:
        """Forget topics not placed since the last pass (unloaded ones)."""
        if self._observed != len(self._placed_in):
            for key in [k for k, placed_in in self._placed_in.items() if placed_in != self._pass]:
                del self._placed_in[key]
                self._topics.pop(key, None)
        self._pass += 1
        self._observed = 0

    def __len__(self) -> int:
        return len(self._topics)
