"""The function's inputs: one consumer per input topic or pattern.

Each consumer gets its own serde (inputs may differ in format). With one
input (the common case) the processing thread receives from its consumer
itself: handing every message over from the client's listener thread costs
more CPU than the function call (measured with bench.functions: 34 -> 74 us
a message on the bare loop). With several inputs, the client's listener
threads put (message, consumer, serde) on one bounded queue; when it is full
they wait, so the broker's flow control slows the topics down rather than the
instance buffering without bound.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import re
import threading
from typing import Any

import pulsar

from pulsar_functions import config
from pulsar_functions.instance import guarantees, serde

log = logging.getLogger(__name__)

#: Messages received but not yet processed, across every input.
QUEUE_MAX = 1000
#: How often a waiting listener looks at the stop flag.
QUEUE_POLL_S = 0.2
#: The client's smallest ack timeout; Apache's timeoutMs below it is raised to it.
ACK_TIMEOUT_MIN_MS = 10_000


@dataclasses.dataclass(frozen=True)
class Received:
    message: Any
    consumer: Any
    serde: serde.SerDe


class InputSource:
    def __init__(self, client: pulsar.Client, function: config.FunctionConfig,
                 negative_ack_delay_ms: int) -> None:
        self._client = client
        self._function = function
        self._negative_ack_delay_ms = negative_ack_delay_ms
        self._queue: queue.Queue[Received] = queue.Queue(QUEUE_MAX)
        self._stopping = threading.Event()
        self.consumers: list[Any] = []
        #: With one input: its serde, and messages are received straight from its consumer.
        self._direct: serde.SerDe | None = None

    def open(self) -> None:
        direct = len(self._function.inputs) == 1
        for spec in self._function.inputs:
            self.consumers.append(self._subscribe(spec, listen=not direct))
        if direct:
            spec = self._function.inputs[0]
            self._direct = serde.resolve(spec.serde_class_name, spec.schema_type)

    def _subscribe(self, spec: config.InputSpec, *, listen: bool) -> Any:
        function = self._function
        spec_serde = serde.resolve(spec.serde_class_name, spec.schema_type)
        kind = guarantees.subscription_kind(function)
        options: dict[str, Any] = {
            "consumer_type": getattr(pulsar.ConsumerType, kind.value),
            "initial_position": (
                pulsar.InitialPosition.Earliest
                if function.subscription_position is config.SubscriptionPosition.EARLIEST
                else pulsar.InitialPosition.Latest),
            "negative_ack_redelivery_delay_ms": self._negative_ack_delay_ms,
            "receiver_queue_size": QUEUE_MAX,
        }
        if listen:
            options["message_listener"] = lambda consumer, message: self._enqueue(
                Received(message, consumer, spec_serde))
        if function.max_message_retries:
            options["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(
                function.max_message_retries, function.dead_letter_topic)
        if function.timeout_ms:
            options["unacked_messages_timeout_ms"] = max(function.timeout_ms,
                                                         ACK_TIMEOUT_MIN_MS)
        topic: Any = re.compile(spec.topic) if spec.is_pattern else spec.topic
        return self._client.subscribe(topic, function.effective_subscription_name, **options)

    def _enqueue(self, received: Received) -> None:
        while not self._stopping.is_set():
            try:
                self._queue.put(received, timeout=QUEUE_POLL_S)
                return
            except queue.Full:
                continue
        # Stopping: the message stays unacknowledged and comes again to whoever consumes next.

    def next(self, timeout_s: float) -> Received | None:
        if self._direct is not None:
            if self._stopping.is_set():
                return None
            consumer = self.consumers[0]
            try:
                return Received(consumer.receive(int(timeout_s * 1000)), consumer, self._direct)
            except pulsar.Timeout:
                return None
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def consumer_of(self, topic: str | None) -> Any:
        """The consumer of topic (by full name or partition), or the first one."""
        for consumer, spec in zip(self.consumers, self._function.inputs, strict=True):
            if topic and (spec.topic == topic or topic.startswith(spec.topic + "-partition-")):
                return consumer
        return self.consumers[0]

    def stop(self) -> None:
        """Stop handing out messages; listeners waiting on a full queue give theirs up."""
        self._stopping.set()

    def close(self) -> None:
        self._stopping.set()
        for consumer in self.consumers:
            try:
                consumer.close()
            except pulsar.PulsarException as exc:
                log.warning("closing a consumer failed: %s", exc)
