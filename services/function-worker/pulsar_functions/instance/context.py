"""The `context` a function's process(input, context) receives: the client wheel's Context API.

It describes the message being processed and the function, and gives the
function its logger, user config, secrets, metrics, publishing, manual
acknowledgement and state. State is opened on first use, so a function that
keeps none never creates a state topic.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pulsar
from pulsar.functions import context as client_context

from pulsar_functions import config
from pulsar_functions.instance import metrics, secrets, serde, state


class Publisher:
    """Producers of context.publish, one per topic, created on first use."""

    def __init__(self, client: pulsar.Client) -> None:
        self._client = client
        self._producers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def producer(self, topic: str) -> Any:
        with self._lock:
            if topic not in self._producers:
                self._producers[topic] = self._client.create_producer(
                    topic, batching_enabled=True, batching_max_publish_delay_ms=10,
                    block_if_queue_full=True)
            return self._producers[topic]

    def flush_and_close(self) -> None:
        with self._lock:
            for producer in self._producers.values():
                try:
                    producer.flush()
                    producer.close()
                except pulsar.PulsarException:
                    pass
            self._producers.clear()


class InstanceContext(client_context.Context):  # type: ignore[misc]
    def __init__(
        self,
        function: config.FunctionConfig,
        instance_id: int,
        function_id: str,
        function_version: str,
        logger: logging.Logger,
        secrets_provider: secrets.SecretsProvider,
        stats: metrics.InstanceStats,
        publisher: Publisher,
        open_state: Callable[[], state.TopicStateStore],
        acknowledge: Callable[[Any, str | None], None],
    ) -> None:
        self._function = function
        self._instance_id = instance_id
        self._function_id = function_id
        self._function_version = function_version
        self._logger = logger
        self._secrets = secrets_provider
        self._stats = stats
        self._publisher = publisher
        self._open_state = open_state
        self._state: state.TopicStateStore | None = None
        self._acknowledge = acknowledge
        self._message: Any = None
        self._output_serde_name = function.output_serde_class_name or serde.DEFAULT

    def set_message(self, message: Any) -> None:
        """The message the next process() call is about."""
        self._message = message

    def get_message_id(self) -> Any:
        return self._message.message_id()

    def get_message_key(self) -> str | None:
        return self._message.partition_key() or None

    def get_message_eventtime(self) -> int:
        return int(self._message.event_timestamp())

    def get_message_properties(self) -> Mapping[str, str]:
        return dict(self._message.properties())

    def get_current_message_topic_name(self) -> str:
        return str(self._message.topic_name())

    def get_partition_key(self) -> str | None:
        return self._message.partition_key() or None

    def get_ordering_key(self) -> Any:
        return self._message.ordering_key() or None

    def get_function_tenant(self) -> str:
        return self._function.tenant

    def get_function_namespace(self) -> str:
        return self._function.namespace

    def get_function_name(self) -> str:
        return self._function.name

    def get_function_id(self) -> str:
        return self._function_id

    def get_instance_id(self) -> int:
        return self._instance_id

    def get_function_version(self) -> str:
        return self._function_version

    def get_logger(self) -> logging.Logger:
        return self._logger

    def get_user_config_value(self, key: str) -> Any:
        return self._function.user_config.get(key)

    def get_user_config_map(self) -> dict[str, Any]:
        return dict(self._function.user_config)

    def get_secret(self, secret_name: str) -> str | None:
        return self._secrets.secret(secret_name)

    def record_metric(self, metric_name: str, metric_value: float) -> None:
        self._stats.record_metric(metric_name, metric_value)

    def get_input_topics(self) -> list[str]:
        return [spec.topic for spec in self._function.inputs]

    def get_output_topic(self) -> str | None:
        return self._function.output

    def get_output_serde_class_name(self) -> str:
        return self._output_serde_name

    def publish(self, topic_name: str, message: Any, serde_class_name: str = serde.DEFAULT,
                properties: Mapping[str, str] | None = None, compression_type: Any = None,
                callback: Callable[..., Any] | None = None,
                message_conf: Mapping[str, Any] | None = None) -> None:
        payload = serde.resolve(serde_class_name).serialize(message)
        options = dict(message_conf or {})
        if properties:
            options["properties"] = dict(properties)

        def done(result: Any, message_id: Any) -> None:
            if callback is not None:
                callback(result, message_id)

        self._publisher.producer(topic_name).send_async(payload, done, **options)

    def ack(self, msgid: Any, topic: str | None = None) -> None:
        self._acknowledge(msgid, topic)

    def _store(self) -> state.TopicStateStore:
        if self._state is None:
            self._state = self._open_state()
        return self._state

    def incr_counter(self, key: str, amount: int) -> None:
        self._store().incr(key, amount)

    def get_counter(self, key: str) -> int:
        return self._store().counter(key)

    def del_counter(self, key: str) -> None:
        self._store().delete(key)

    def put_state(self, key: str, value: Any) -> None:
        data = value if isinstance(value, bytes) else str(value).encode()
        self._store().put(key, data)

    def get_state(self, key: str) -> bytes | None:
        return self._store().value(key)

    def close_state(self) -> None:
        if self._state is not None:
            self._state.close()
