"""Where the function's return values go: the output topic.

Each output carries the input's key, event time and properties, plus where it
came from (`__pfn_input_topic__`, `__pfn_input_msg_id__`, as Apache's
instances mark them; the worker's trigger finds its answer by them). Under
EFFECTIVELY_ONCE each input partition has its own deduplicated producer and
every output the sequence id of its input (see guarantees.py).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from typing import Any

import pulsar

from pulsar_functions import config
from pulsar_functions.instance import guarantees

INPUT_TOPIC_PROPERTY = "__pfn_input_topic__"
INPUT_MESSAGE_ID_PROPERTY = "__pfn_input_msg_id__"
#: Sends in flight per output producer before send_async waits.
PENDING_SENDS_MAX = 1000

SendDone = Callable[[bool], None]


class OutputSink:
    def __init__(self, client: pulsar.Client, function: config.FunctionConfig,
                 schema: Any | None = None) -> None:
        """schema: the output's pulsar.schema.Schema (outputs are then its objects), or None
        for bytes."""
        assert function.output is not None
        self._client = client
        self._schema_option: dict[str, Any] = {} if schema is None else {"schema": schema}
        self._function = function
        self._output = function.output
        self._deduplicated = guarantees.deduplicates_output(function)
        self._producers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def open(self) -> None:
        if not self._deduplicated:
            self._producers[""] = self._client.create_producer(
                self._output, batching_enabled=True, batching_max_publish_delay_ms=10,
                max_pending_messages=PENDING_SENDS_MAX, block_if_queue_full=True,
                **self._schema_option)

    def _producer_for(self, input_topic: str) -> Any:
        if not self._deduplicated:
            return self._producers[""]
        with self._lock:
            producer = self._producers.get(input_topic)
            if producer is None:
                # No send timeout: a broker away for a while delays outputs, never reorders them.
                producer = self._client.create_producer(
                    self._output,
                    producer_name=guarantees.output_producer_name(self._function, input_topic),
                    batching_enabled=False, send_timeout_millis=0,
                    max_pending_messages=PENDING_SENDS_MAX, block_if_queue_full=True,
                    **self._schema_option)
                self._producers[input_topic] = producer
            return producer

    def send(self, payload: Any, source: Any, done: SendDone) -> None:
        """Send payload (bytes, or an object of the output's schema) as the output of input
        message source; done(ok) once the broker answers. The schema's TypeError or ValueError
        for an object it cannot encode comes out of here."""
        message_id = source.message_id()
        properties = dict(source.properties())
        properties[INPUT_TOPIC_PROPERTY] = source.topic_name()
        properties[INPUT_MESSAGE_ID_PROPERTY] = base64.b64encode(message_id.serialize()).decode()
        options: dict[str, Any] = {"properties": properties}
        if source.partition_key():
            options["partition_key"] = source.partition_key()
        if source.event_timestamp():
            options["event_timestamp"] = source.event_timestamp()
        if self._deduplicated:
            options["sequence_id"] = guarantees.sequence_id(
                message_id.ledger_id(), message_id.entry_id(), message_id.batch_index())

        def callback(result: Any, _message_id: Any) -> None:
            done(result == pulsar.Result.Ok)

        self._producer_for(source.topic_name()).send_async(payload, callback, **options)

    def flush_and_close(self) -> None:
        with self._lock:
            producers = list(self._producers.values())
            self._producers.clear()
        for producer in producers:
            try:
                producer.flush()
                producer.close()
            except pulsar.PulsarException:
                pass
