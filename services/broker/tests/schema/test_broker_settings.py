"""broker.conf schema settings: isSchemaValidationEnforced and isAllowAutoUpdateSchemaEnabled."""

from __future__ import annotations

import json
import pathlib
import urllib.request
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String

from pulsar_broker import testing as broker_testing


class Reading(Record):
    sensor = String(required=True)
    value = Integer(required=True)


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("strict-schemas") / "data"
    process = broker_testing.StandaloneProcess(data_dir, {
        "journalSyncData": "false",
        "isSchemaValidationEnforced": "true",
        "isAllowAutoUpdateSchemaEnabled": "false",
    })
    process.start()
    yield process
    process.stop()


def test_enforced_validation_and_no_auto_update(strict: broker_testing.StandaloneProcess,
                                                tmp_path: pathlib.Path) -> None:
    topic = f"persistent://public/default/strict-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(strict.service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        # Auto update off: even a first schema must be registered by an admin.
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic, schema=AvroSchema(Reading))
        # No schema yet: a producer without schema is fine even with validation enforced.
        client.create_producer(topic).close()
        body = json.dumps({"type": "AVRO", "schema": json.dumps(Reading.schema())}).encode()
        path = "/admin/v2/schemas/" + topic.removeprefix("persistent://") + "/schema"
        request = urllib.request.Request(strict.web_url + path, data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
        producer = client.create_producer(topic, schema=AvroSchema(Reading))
        producer.send(Reading(sensor="s", value=1))
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic)  # validation enforced: a schema is required
    finally:
        client.close()
