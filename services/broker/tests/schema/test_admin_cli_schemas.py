"""`pulsar-admin schemas ...` run as a process against the real standalone."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import uuid

from pulsar_broker import testing as broker_testing

DEFINITION = {"type": "record", "name": "Event", "fields": [{"name": "id", "type": "long"}]}
EVOLVED = {**DEFINITION, "fields": DEFINITION["fields"] + [
    {"name": "tag", "type": ["null", "string"], "default": None}]}
BROKEN = {**DEFINITION, "fields": [{"name": "id", "type": "string"}]}


def test_schemas_commands(standalone: broker_testing.StandaloneProcess,
                          tmp_path: pathlib.Path) -> None:
    env = {**os.environ, "PULSAR_ADMIN_URL": standalone.web_url}

    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                              env=env, capture_output=True, text=True, timeout=60, check=False)

    def payload(name: str, definition: dict[str, object]) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(definition),
                                    "properties": {"owner": "ops"}}))
        return str(path)

    topic = f"persistent://public/default/cli-schema-{uuid.uuid4().hex[:8]}"
    missing = admin("schemas", "get", topic)
    assert missing.returncode == 1 and "Schema not found" in missing.stderr
    assert admin("schemas", "upload", topic, "-f", payload("v0.json", DEFINITION)).returncode == 0
    assert admin("schemas", "upload", topic, "--filename",
                 payload("v1.json", EVOLVED)).returncode == 0

    latest = json.loads(admin("schemas", "get", topic).stdout)
    assert latest["version"] == 1
    assert latest["schemaInfo"]["schema"] == EVOLVED and latest["schemaInfo"]["type"] == "AVRO"
    assert latest["schemaInfo"]["properties"] == {"owner": "ops"}
    first = json.loads(admin("schemas", "get", topic, "--version", "0").stdout)
    assert first["schema"] == DEFINITION
    every = json.loads(admin("schemas", "get", topic, "--all-versions").stdout)
    assert [s["schema"] for s in every] == [DEFINITION, EVOLVED]

    check = json.loads(admin("schemas", "compatibility", topic, "-f",
                             payload("bad.json", BROKEN)).stdout)
    assert check == {"isCompatibility": False, "schemaCompatibilityStrategy": "FULL"}
    refused = admin("schemas", "upload", topic, "-f", payload("bad.json", BROKEN))
    assert refused.returncode == 1 and "Incompatible schema" in refused.stderr

    assert admin("schemas", "delete", topic).returncode == 0
    deleted = admin("schemas", "get", topic)
    assert deleted.returncode == 1 and "Schema is deleted" in deleted.stderr
