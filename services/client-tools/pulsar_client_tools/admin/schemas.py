"""`pulsar-admin schemas get|upload|delete|compatibility`.

`get` prints what Apache's CLI prints: the version and the schema info (an
AVRO or JSON definition as a JSON object); `--version N` and
`--all-versions` print schema infos. `upload` and `compatibility` read a
PostSchemaPayload file: {"type": ..., "schema": "<definition>", "properties": {}}.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pulsar_common import naming

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group, topic_name

BASE = "/admin/v2/schemas"
#: Types whose definition is JSON and is shown as an object.
_JSON_TYPES = ("AVRO", "JSON", "PROTOBUF", "KEY_VALUE")


def schema_path(text: str) -> str:
    name = topic_name(text)
    return (f"{BASE}/{client.quote(name.tenant)}/{client.quote(name.namespace)}/"
            f"{client.quote(name.local_name)}")


def schema_info(topic: str, response: dict[str, Any]) -> dict[str, Any]:
    """Apache's SchemaInfo (as its CLI prints it) from a GetSchemaResponse."""
    definition: Any = response.get("data", "")
    if response.get("type") in _JSON_TYPES:
        try:
            definition = json.loads(definition)
        except ValueError:
            pass
    return {"name": naming.TopicName.parse(topic).local_name, "schema": definition,
            "type": response.get("type"), "timestamp": response.get("timestamp", 0),
            "properties": response.get("properties", {})}


def _read_payload(filename: str) -> Any:
    try:
        with open(filename, encoding="utf-8") as source:
            return json.load(source)
    except (OSError, ValueError) as exc:
        raise client.AdminError(400, f"Cannot read schema file {filename}: {exc}") from exc


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    path = schema_path(args.topic)
    if args.all_versions:
        found = admin.get(path + "/schemas")["getSchemaResponses"]
        output.print_json([schema_info(args.topic, r) for r in found])
    elif args.version is not None:
        output.print_json(schema_info(args.topic, admin.get(f"{path}/schema/{args.version}")))
    else:
        found = admin.get(path + "/schema")
        output.print_json({"version": found["version"],
                           "schemaInfo": schema_info(args.topic, found)})


def _upload(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(schema_path(args.topic) + "/schema", _read_payload(args.filename))


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(schema_path(args.topic) + "/schema", {"force": "true"} if args.force else None)


def _compatibility(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.post(schema_path(args.topic) + "/compatibility",
                                 _read_payload(args.filename)))


def register(groups: Any) -> None:
    group = Group(groups, "schemas", "Operations about schemas")
    get = group.command("get", "Get the schema for a topic", _get)
    get.add_argument("topic")
    get.add_argument("--version", type=int, help="version of the schema definition to fetch")
    get.add_argument("-a", "--all-version", "--all-versions", dest="all_versions",
                     action="store_true", help="all versions of the schema")
    upload = group.command("upload", "Update the schema for a topic", _upload)
    upload.add_argument("topic")
    upload.add_argument("-f", "--filename", required=True, help="schema definition file (JSON)")
    delete = group.command("delete", "Delete all versions schema of a topic", _delete)
    delete.add_argument("topic")
    delete.add_argument("-f", "--force", action="store_true",
                        help="also remove the history (versions start again at 0)")
    compatible = group.command("compatibility", "Test the compatibility of a schema with a topic",
                               _compatibility)
    compatible.add_argument("topic")
    compatible.add_argument("-f", "--filename", required=True,
                            help="schema definition file (JSON)")
