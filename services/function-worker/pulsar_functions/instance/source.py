"""The function's inputs: one consumer per input topic or pattern.

Each consumer gets its own serde (inputs may differ in format), or its Pulsar
schema (schemas.py), whose decoded value the function then gets. With one
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
from collections.abc import Callable
from typing import Any

import pulsar

from pulsar_functions import config
from pulsar_functions.instance import guarantees, schemas, serde

log = logging.getLogger(__name__)

#: Messages received but not yet processed, across every input.
QUEUE_MAX = 1000
#: How often a waiting listener looks at the stop flag.
QUEUE_POLL_S = 0.2
#: The client's smallest ack timeout; Apache's timeoutMs below it is raised to it.
ACK_TIMEOUT_MIN_MS = 10_000


#: Turns a received message into the function's input.
Decode = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Received:
    message: Any
    consumer: Any
    decode: Decode


def _decoder(spec_serde: serde.SerDe | None) -> Decode:
    if spec_serde is None:
        return lambda message: message.value()  # the consumer's schema decodes
    return lambda message: spec_serde.deserialize(message.data())


class InputSource:
    def __init__(self, client: pulsar.Client, function: config.FunctionConfig,
                 negative_ack_delay_ms: int, load: schemas.Load) -> None:
        """load(name) imports a class of the function's code (schema record classes)."""
        self._client = client
        self._load = load
        self._function = function
        self._negative_ack_delay_ms = negative_ack_delay_ms
        self._queue: queue.Queue[Received] = queue.Queue(QUEUE_MAX)
        self._stopping = threading.Event()
        self.consumers: list[Any] = []
        #: With one input: its decoder, and messages are received straight from its consumer.
        self._direct: Decode | None = None

    def open(self) -> None:
        direct = len(self._function.inputs) == 1
        for spec in self._function.inputs:
            consumer, decode = self._subscribe(spec, listen=not direct)
            self.consumers.append(consumer)
            if direct:
                self._direct = decode

    def _subscribe(self, spec: config.InputSpec, *, listen: bool) -> tuple[Any, Decode]:
        function = self._function
        schema = schemas.resolve(spec.schema_type, function.input_type_class_name, self._load)
        decode = _decoder(None if schema is not None
                          else serde.resolve(spec.serde_class_name, spec.schema_type))
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
        if schema is not None:
            options["schema"] = schema
        if listen:
            options["message_listener"] = lambda consumer, message: self._enqueue(
                Received(message, consumer, decode))
        if function.max_message_retries:
            options["dead_letter_policy"] = pulsar.ConsumerDeadLetterPolicy(
                function.max_message_retries, function.dead_letter_topic)
        if function.timeout_ms:
            options["unacked_messages_timeout_ms"] = max(function.timeout_ms,
                                                         ACK_TIMEOUT_MIN_MS)
        topic: Any = re.compile(spec.topic) if spec.is_pattern else spec.topic
        return self._client.subscribe(topic, function.effective_subscription_name,
                                      **options), decode

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
