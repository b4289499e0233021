"""context.get_logger() records, also published to the function's log topic when one is set."""

from __future__ import annotations

import logging
from typing import Any

import pulsar

from pulsar_functions import config


class LogTopicHandler(logging.Handler):
    """Publishes each record's text to the log topic, marked with level, fqfn and instance."""

    def __init__(self, client: pulsar.Client, function: config.FunctionConfig,
                 instance_id: int) -> None:
        super().__init__()
        self._fqfn = function.fqfn
        self._instance_id = str(instance_id)
        assert function.log_topic is not None
        self._producer: Any = client.create_producer(
            function.log_topic, batching_enabled=True, batching_max_publish_delay_ms=100,
            block_if_queue_full=False)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._producer.send_async(
                self.format(record).encode(), _ignore,
                properties={"loglevel": record.levelname, "fqfn": self._fqfn,
                            "instance": self._instance_id})
        except Exception:  # noqa: BLE001 (a logger must never raise into the function)
            self.handleError(record)

    def close(self) -> None:
        try:
            self._producer.flush()
            self._producer.close()
        except pulsar.PulsarException:
            pass
        super().close()


def _ignore(_result: Any, _message_id: Any) -> None:
    """A lost log line is not worth failing for."""
