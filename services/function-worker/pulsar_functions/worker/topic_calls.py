"""The admin calls that go through topics, on the official client: trigger and state.

trigger publishes a value to an input topic and waits for the output that
names that message as its input (`__pfn_input_msg_id__`); querystate folds
the function's state topic; putstate appends to it. The client is blocking,
so each call runs in a thread.
"""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any

import pulsar

from pulsar_functions import broker_client, config, errors, state_log
from pulsar_functions.instance import sink, state

#: How long trigger waits for the function's answer.
TRIGGER_TIMEOUT_S = 30.0


class TopicCalls:
    def __init__(self, service_url: str, client: broker_client.BrokerClientSettings = broker_client.ANONYMOUS) -> None:
        self._service_url = service_url
        self._client_settings = client
        self._client: Any = None

    def _connected(self) -> Any:
        if self._client is None:
            self._client = pulsar.Client(
                self._service_url, operation_timeout_seconds=30,
                logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
                **self._client_settings.pulsar_client_arguments())
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def trigger(self, function: config.FunctionConfig, topic: str | None,
                      value: bytes) -> bytes | None:
        return await asyncio.to_thread(self._trigger, function, topic, value)

    def _trigger(self, function: config.FunctionConfig, topic: str | None,
                 value: bytes) -> bytes | None:
        inputs = [spec.topic for spec in function.inputs if not spec.is_pattern]
        target = topic or (inputs[0] if inputs else None)
        if target is None or (topic is not None and topic not in inputs):
            raise errors.InvalidFunctionConfigError(f"{topic or 'a pattern'} is not an input")
        client = self._connected()
        reader = None
        if function.output:
            reader = client.create_reader(function.output, pulsar.MessageId.latest)
        producer = client.create_producer(target)
        try:
            sent = producer.send(value)
            if reader is None:
                return None
            wanted = base64.b64encode(sent.serialize()).decode()
            deadline = time.monotonic() + TRIGGER_TIMEOUT_S
            while time.monotonic() < deadline:
                try:
                    message = reader.read_next(timeout_millis=500)
                except pulsar.Timeout:
                    continue
                if message.properties().get(sink.INPUT_MESSAGE_ID_PROPERTY) == wanted:
                    return bytes(message.data())
            raise TimeoutError(f"no output for the triggered message in {TRIGGER_TIMEOUT_S}s")
        finally:
            producer.close()
            if reader is not None:
                reader.close()

    async def query_state(self, function: config.FunctionConfig,
                          key: str) -> state_log.Entry | None:
        return await asyncio.to_thread(self._with_store, function,
                                       lambda store: store.entry(key))

    async def put_state(self, function: config.FunctionConfig,
                        update: state_log.Update) -> None:
        await asyncio.to_thread(self._with_store, function, lambda store: store.write(update))

    def _with_store(self, function: config.FunctionConfig, call: Any) -> Any:
        # The admin API only puts and sets (whole values), never increments, so it needs no
        # writer name of its own among the instances'.
        store = state.TopicStateStore(self._connected(), function.state_topic, "admin")
        store.open()
        try:
            return call(store)
        finally:
            store.close()
