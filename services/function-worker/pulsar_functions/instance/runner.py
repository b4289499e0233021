"""FunctionInstance: consume the inputs, call the function, publish, acknowledge.

One thread processes messages in arrival order; the client's threads deliver
them (source.py) and report sends (sink.py). Acknowledgement follows the
processing guarantee (guarantees.py). A function that raises has its input
negatively acknowledged, so it comes again, up to maxMessageRetries times
before the client moves it to the dead-letter topic. Under EFFECTIVELY_ONCE
a failed output send stops the instance (exit status 1): outputs sent after it
would otherwise be kept and the retried one dropped as a duplicate; the
restarted instance resumes from the last acknowledgement instead.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pulsar

from pulsar_functions import broker_client, config
from pulsar_functions.instance import (
    context,
    guarantees,
    loader,
    log_topic,
    metrics,
    schemas,
    secrets,
    serde,
    sink,
    source,
    state,
)

log = logging.getLogger(__name__)

#: How long the processing loop waits for a message before looking at the stop flag.
POLL_S = 0.2


@dataclasses.dataclass(frozen=True)
class InstanceOptions:
    instance_id: int = 0
    service_url: str = "pulsar://localhost:6650"
    function_id: str = ""
    function_version: str = "0"
    secrets_provider: str = "environment"
    secrets_dir: pathlib.Path | None = None
    negative_ack_delay_ms: int = 1000
    work_dir: pathlib.Path = pathlib.Path(".")
    cluster: str = "standalone"
    client: broker_client.BrokerClientSettings = broker_client.ANONYMOUS


class FunctionInstance:
    def __init__(self, function: config.FunctionConfig, options: InstanceOptions) -> None:
        self.function = function
        self.options = options
        self.stats = metrics.InstanceStats(function, options.instance_id, options.cluster)
        self._ack_point = guarantees.ack_point(function)
        self._stopping = threading.Event()
        self._failed = threading.Event()
        self._client: Any = None
        self._source: source.InputSource | None = None
        self._sink: sink.OutputSink | None = None
        self._publisher: context.Publisher | None = None
        self._log_handler: log_topic.LogTopicHandler | None = None
        self._context: context.InstanceContext | None = None

    def start(self) -> None:
        """Load the code, open producers and consumers (messages flow once this returns)."""
        function, options = self.function, self.options
        code = loader.code_path(function, options.work_dir, options.client)
        invoke = loader.load(code, function.class_name)
        self._invoke = invoke

        def load(name: str) -> Any:
            return loader.find(code, name)

        output_schema = schemas.resolve(function.output_schema_type,
                                        function.output_type_class_name, load)
        # With a schema the producer encodes the function's objects itself.
        self._encode: Callable[[Any], Any] = (
            (lambda result: result) if output_schema is not None
            else serde.resolve(function.output_serde_class_name,
                               function.output_schema_type).serialize)
        self._client = pulsar.Client(options.service_url, operation_timeout_seconds=30,
                                     logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
                                     **options.client.pulsar_client_arguments())
        self._publisher = context.Publisher(self._client)
        self._context = context.InstanceContext(
            function, options.instance_id,
            options.function_id or str(uuid.uuid5(uuid.NAMESPACE_URL, function.fqfn)),
            options.function_version, self._function_logger(),
            secrets.provider(options.secrets_provider, function.secrets, options.secrets_dir),
            self.stats, self._publisher, self._open_state, self._ack_by_function)
        if function.output:
            self._sink = sink.OutputSink(self._client, function, output_schema)
            self._sink.open()
        self._source = source.InputSource(self._client, function, options.negative_ack_delay_ms,
                                          load)
        self._source.open()
        self.stats.running = True
        log.info("function %s instance %d started (%s, %s subscription %s)", function.fqfn,
                 options.instance_id, function.processing_guarantee.value,
                 guarantees.subscription_kind(function).value,
                 function.effective_subscription_name)

    def _function_logger(self) -> logging.Logger:
        logger = logging.getLogger(f"function.{self.function.fqfn}.{self.options.instance_id}")
        logger.setLevel(logging.INFO)
        if self.function.log_topic:
            self._log_handler = log_topic.LogTopicHandler(
                self._client, self.function, self.options.instance_id)
            logger.addHandler(self._log_handler)
        return logger

    def _open_state(self) -> state.TopicStateStore:
        store = state.TopicStateStore(self._client, self.function.state_topic,
                                      str(self.options.instance_id))
        store.open()
        return store

    def run(self) -> int:
        """Process until stop() (0) or a failure that needs a restart (1)."""
        assert self._source is not None
        while not self._stopping.is_set():
            received = self._source.next(POLL_S)
            if received is not None:
                self._process(received)
        return 1 if self._failed.is_set() else 0

    def stop(self) -> None:
        self._stopping.set()

    def _process(self, received: source.Received) -> None:
        message, consumer = received.message, received.consumer
        assert self._context is not None
        self.stats.on_received()
        if self._ack_point is guarantees.AckPoint.ON_RECEIPT:
            consumer.acknowledge(message)
        started = time.monotonic()
        try:
            value = received.decode(message)
            self._context.set_message(message)
            result = self._invoke(value, self._context)
        except Exception as exc:  # noqa: BLE001 (any error of the user's code)
            log.warning("function raised on %s: %s", message.message_id(), exc)
            self.stats.on_user_exception(exc)
            if self._ack_point is not guarantees.AckPoint.ON_RECEIPT:
                consumer.negative_acknowledge(message)
            return
        self.stats.on_processed((time.monotonic() - started) * 1000)
        if result is None or self._sink is None:
            self._after_output(consumer, message, ok=True)
            return
        try:
            payload = self._encode(result)
        except Exception as exc:  # noqa: BLE001 (a serde, possibly the user's, that failed)
            self.stats.on_user_exception(exc)
            consumer.negative_acknowledge(message)
            return
        try:
            self._sink.send(payload, message,
                            lambda ok: self._after_output(consumer, message, ok))
        except (TypeError, ValueError) as exc:
            # A return value the output's schema cannot encode (the producer encodes).
            self.stats.on_user_exception(exc)
            consumer.negative_acknowledge(message)

    def _after_output(self, consumer: Any, message: Any, ok: bool) -> None:
        if ok:
            if self._ack_point is guarantees.AckPoint.AFTER_OUTPUT:
                try:
                    consumer.acknowledge(message)
                except pulsar.PulsarException as exc:
                    # Closed under us: the input comes again, its output is deduplicated or
                    # (at-least-once) repeated.
                    log.warning("cannot acknowledge %s: %s", message.message_id(), exc)
            return
        self.stats.on_system_exception(RuntimeError(f"output of {message.message_id()} not sent"))
        if guarantees.deduplicates_output(self.function):
            log.error("output send failed under EFFECTIVELY_ONCE; stopping for a restart")
            self._failed.set()
            self._stopping.set()
        elif self._ack_point is not guarantees.AckPoint.ON_RECEIPT:
            consumer.negative_acknowledge(message)

    def _ack_by_function(self, message_id: Any, topic: str | None) -> None:
        assert self._source is not None
        self._source.consumer_of(topic).acknowledge(message_id)

    def close(self) -> None:
        """Stop consuming, let the outputs in flight finish, close everything."""
        self.stats.running = False
        if self._source is not None:
            self._source.stop()
        if self._sink is not None:
            self._sink.flush_and_close()
        if self._source is not None:
            self._source.close()
        if self._publisher is not None:
            self._publisher.flush_and_close()
        if self._context is not None:
            self._context.close_state()
        if self._log_handler is not None:
            self._log_handler.close()
        if self._client is not None:
            self._client.close()
