"""Producer access modes (PIP-68): who may publish on a topic, decided with topic epochs.

Shared producers publish side by side. An exclusive producer (Exclusive,
WaitForExclusive once its turn comes, ExclusiveWithFencing) is the topic's only
producer; taking exclusive access moves the topic epoch forward, and a producer
that reconnects announcing an older epoch than the topic's has been replaced
in between and is fenced. The rules are Apache's (AbstractTopic), including the
errors: ProducerBusy for a shared producer next to an exclusive one,
ProducerFenced for an exclusive one refused.

This module is the pure core: it decides, the topic persists the epoch and
closes or answers producers.
"""

from __future__ import annotations

import dataclasses
import enum

from pulsar_broker import errors

#: Managed ledger property holding the topic epoch (Apache's name, so that it survives
#: topic reloads and moves between brokers with the ledger's metadata).
EPOCH_PROPERTY = "pulsar.topic.epoch"


class AccessMode(enum.IntEnum):
    """CommandProducer.producer_access_mode."""

    SHARED = 0
    EXCLUSIVE = 1
    WAIT_FOR_EXCLUSIVE = 2
    EXCLUSIVE_WITH_FENCING = 3


class ProducerBusyError(errors.BrokerError):
    """A producer cannot join: the topic has an exclusive producer (or one waiting)."""

    http_status = 409


class ProducerFencedError(errors.BrokerError):
    """An exclusive producer is refused, or was replaced (fenced) by a newer one."""

    http_status = 409


@dataclasses.dataclass(frozen=True)
class Grant:
    """Admitted. epoch is the topic epoch to persist before answering (an exclusive
    producer moves it); None for a shared producer, which leaves it as it is."""

    epoch: int | None


@dataclasses.dataclass(frozen=True)
class Queue:
    """WaitForExclusive while another producer is there: wait for its turn."""


@dataclasses.dataclass(frozen=True)
class FenceThenGrant:
    """ExclusiveWithFencing: close every producer and fail every waiting one, then grant."""

    epoch: int


Decision = Grant | Queue | FenceThenGrant


class ProducerAccess:
    """A topic's exclusive-access state: the current epoch, whether an exclusive
    producer holds (or is being granted) the topic, and how many wait for it."""

    def __init__(self, epoch: int | None = None) -> None:
        self.epoch = epoch
        self.exclusive_producer: str | None = None
        self.waiting = 0

    @property
    def has_exclusive(self) -> bool:
        return self.exclusive_producer is not None

    def admit(self, mode: AccessMode, name: str, requested_epoch: int | None,
              has_producers: bool) -> Decision:
        """Decide on a new producer; raises ProducerBusyError / ProducerFencedError.

        An exclusive grant reserves the topic for `name` at once (before the epoch is
        persisted), so that a second request arriving meanwhile sees it taken."""
        if mode is AccessMode.SHARED:
            if self.has_exclusive or self.waiting:
                raise ProducerBusyError(
                    f"Topic has an existing exclusive producer: {self.exclusive_producer}")
            return Grant(None)
        if mode is AccessMode.EXCLUSIVE:
            if self.has_exclusive or self.waiting:
                raise ProducerFencedError(
                    f"Topic has an existing exclusive producer: {self.exclusive_producer}")
            if has_producers:
                raise ProducerFencedError("Topic has existing shared producers")
            return Grant(self._take(name, requested_epoch))
        if mode is AccessMode.WAIT_FOR_EXCLUSIVE:
            if self.has_exclusive or has_producers:
                self.waiting += 1
                return Queue()
            return Grant(self._take(name, requested_epoch))
        # ExclusiveWithFencing. Unlike Apache, which closes the current producers before
        # comparing epochs, a stale reconnecting producer is refused without fencing
        # anyone: otherwise the producer it lost to would be closed once more for nothing.
        self._check_epoch(requested_epoch)
        fence = self.has_exclusive or has_producers or self.waiting > 0
        epoch = self._take(name, requested_epoch)
        return FenceThenGrant(epoch) if fence else Grant(epoch)

    def promote(self, name: str, requested_epoch: int | None) -> int:
        """The next waiting producer takes the topic (its wait ended); its new epoch.
        A waiter whose epoch has gone stale meanwhile is fenced (raises)."""
        self.waiting -= 1
        return self._take(name, requested_epoch)

    def stop_waiting(self) -> None:
        """A waiting producer gave up (closed, disconnected or fenced)."""
        self.waiting -= 1

    def granted(self, epoch: int) -> None:
        """The epoch of a grant is persisted: it is the topic's from now on."""
        self.epoch = epoch

    def release(self) -> None:
        """The exclusive producer left (or its grant failed)."""
        self.exclusive_producer = None

    def _take(self, name: str, requested_epoch: int | None) -> int:
        self._check_epoch(requested_epoch)
        self.exclusive_producer = name
        if requested_epoch is not None:
            return requested_epoch
        return (-1 if self.epoch is None else self.epoch) + 1

    def _check_epoch(self, requested_epoch: int | None) -> None:
        current = -1 if self.epoch is None else self.epoch
        if requested_epoch is not None and requested_epoch < current:
            raise ProducerFencedError(
                f"Topic epoch has already moved. Current epoch: {current}, "
                f"Producer epoch: {requested_epoch}")
