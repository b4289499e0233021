"""One consumer of a subscription: its flow permits, the entries it holds unacknowledged,
and the connection its MESSAGE frames go out on.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pulsar_broker.managed_ledger import api as ml


class SubType(enum.IntEnum):
    """CommandSubscribe.SubType numbers."""

    EXCLUSIVE = 0
    SHARED = 1
    FAILOVER = 2
    KEY_SHARED = 3


#: Apache's SubscriptionType names (stats' `type`, subscriptionTypesEnabled).
SUBSCRIPTION_TYPE_NAMES = {SubType.EXCLUSIVE: "Exclusive", SubType.SHARED: "Shared",
                           SubType.FAILOVER: "Failover", SubType.KEY_SHARED: "Key_Shared"}


class ConsumerConnection(Protocol):
    """What a consumer needs from the connection it was created on."""

    def send_message(
        self, consumer_id: int, position: ml.Position, redelivery_count: int, data: bytes,
        partition: int, ack_set: Sequence[int] | None = None,
    ) -> None:
        """A MESSAGE frame; ack_set (CommandMessage.ack_set) names the messages of a partly
        acknowledged batch still to deliver, so the client skips the others."""

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None: ...

    def send_close_consumer(self, consumer_id: int) -> None: ...

    @property
    def remote_address(self) -> str: ...

    @property
    def writable(self) -> bool:
        """False while the connection's outbound buffer is above its high-water mark: no
        more MESSAGE frames until it drains (the connection then wakes the dispatchers)."""


@dataclass(frozen=True, slots=True)
class Dispatched:
    """An entry on its way to a consumer, with what the dispatcher learned about it."""

    entry: ml.Entry
    num_messages: int
    sticky_key: bytes
    #: MessageMetadata.deliver_at_time, ms since the epoch; 0 when not delayed.
    deliver_at_ms: int = 0


class Consumer:
    def __init__(
        self,
        cnx: ConsumerConnection,
        consumer_id: int,
        consumer_name: str,
        sub_type: SubType,
        priority_level: int,
        partition_index: int,
        max_unacked_messages: int,
    ) -> None:
        self.cnx = cnx
        self.consumer_id = consumer_id
        self.consumer_name = consumer_name
        self.sub_type = sub_type
        self.priority_level = priority_level
        self.partition_index = partition_index
        self.max_unacked_messages = max_unacked_messages
        self.permits = 0
        #: Delivered, not yet acknowledged: position -> number of messages in the entry.
        self.pending_acks: dict[ml.Position, int] = {}
        self.unacked_messages = 0
        self.msg_out = 0
        self.bytes_out = 0
        self.closed = False
        self._blocked_on_unacked = False

    @property
    def blocked_on_unacked(self) -> bool:
        """Apache's blockedConsumerOnUnackedMsgs: set once a Shared or Key_Shared consumer
        holds maxUnackedMessagesPerConsumer messages unacknowledged, cleared only when
        acknowledgements (or redelivery) bring that down to half of it, as Apache's consumer
        does, so a consumer at the limit does not get one message per acknowledgement."""
        limit = self.max_unacked_messages
        if limit <= 0 or self.sub_type not in (SubType.SHARED, SubType.KEY_SHARED):
            self._blocked_on_unacked = False
        elif self.unacked_messages >= limit:
            self._blocked_on_unacked = True
        elif self._blocked_on_unacked and self.unacked_messages <= limit // 2:
            self._blocked_on_unacked = False
        return self._blocked_on_unacked

    @property
    def available(self) -> bool:
        return (not self.closed and self.permits > 0 and not self.blocked_on_unacked
                and self.cnx.writable)

    def flow(self, permits: int) -> None:
        self.permits += permits

    def send(self, item: Dispatched, redelivery_count: int,
             ack_set: Sequence[int] | None = None) -> int:
        """Send an entry; with an ack_set only its unacknowledged messages count (the client
        skips the others, and they use no permits). Returns how many messages went out."""
        position = item.entry.position
        messages = item.num_messages if ack_set is None else min(
            item.num_messages, unacknowledged_in(ack_set))
        self.permits -= messages
        self.unacked_messages += messages - self.pending_acks.get(position, 0)
        self.pending_acks[position] = messages
        if 0 < self.max_unacked_messages <= self.unacked_messages:
            self._blocked_on_unacked = self.sub_type in (SubType.SHARED, SubType.KEY_SHARED)
        self.msg_out += messages
        self.bytes_out += len(item.entry.data)
        self.cnx.send_message(
            self.consumer_id, position, redelivery_count, item.entry.data, self.partition_index,
            ack_set,
        )
        return messages

    def acknowledged(self, position: ml.Position) -> bool:
        """Forget a pending entry; True when this consumer held it."""
        count = self.pending_acks.pop(position, None)
        if count is None:
            return False
        self.unacked_messages -= count
        return True

    def partly_acknowledged(self, position: ml.Position, unacknowledged: int) -> None:
        """Some messages of a batch it holds were acknowledged; `unacknowledged` remain."""
        held = self.pending_acks.get(position)
        if held is not None and unacknowledged < held:
            self.pending_acks[position] = unacknowledged
            self.unacked_messages -= held - unacknowledged

    def acknowledged_up_to(self, position: ml.Position) -> None:
        for held in [p for p in self.pending_acks if p <= position]:
            self.acknowledged(held)

    def take_pending(self) -> list[ml.Position]:
        """All pending entries, now no longer held by this consumer (for redelivery)."""
        held = sorted(self.pending_acks)
        self.pending_acks.clear()
        self.unacked_messages = 0
        return held


def unacknowledged_in(ack_set: Sequence[int]) -> int:
    """How many messages a batch-index ack set (64-bit words, set bit: not acknowledged)
    leaves unacknowledged."""
    return sum((word & 0xFFFF_FFFF_FFFF_FFFF).bit_count() for word in ack_set)
