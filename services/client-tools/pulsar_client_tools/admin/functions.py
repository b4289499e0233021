"""`pulsar-admin functions ...`: Pulsar Functions through Apache's `/admin/v3/functions` API.

The calls go to the admin URL (a functions worker serves them). Results
print as Apache's pulsar-admin prints them: JSON for get, status, stats and
querystate, one name a line for list, the output for trigger, and "Created
successfully", "Updated successfully", "Deleted successfully", "Started
successfully", "Stopped successfully", "Restarted successfully" for the
others. `localrun` needs no worker: function_localrun.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

from pulsar_common import naming

from pulsar_client_tools.admin import client, function_config, function_localrun, output
from pulsar_client_tools.admin.common import Group, Run

BASE = "/admin/v3/functions"
#: How often `querystate --watch` reads the key again (Apache's period).
WATCH_INTERVAL_S = 1.0


def _function_path(args: argparse.Namespace) -> str:
    tenant, namespace, name = function_config.function_name(args)
    return f"{BASE}/{client.quote(tenant)}/{client.quote(namespace)}/{client.quote(name)}"


def _document_path(document: dict[str, str]) -> str:
    return (f"{BASE}/{client.quote(document['tenant'])}/{client.quote(document['namespace'])}/"
            f"{client.quote(document['name'])}")


def _instance_path(args: argparse.Namespace) -> str:
    """The function's path, or one instance's when --instance-id is given."""
    path = _function_path(args)
    return path if args.instance_id is None else f"{path}/{args.instance_id}"


def _create(admin: client.AdminClient, args: argparse.Namespace) -> None:
    document = function_config.build(args)
    function_config.check_complete(document)
    admin.send_form("POST", _document_path(document), function_config.form(document))
    print("Created successfully")


def _update(admin: client.AdminClient, args: argparse.Namespace) -> None:
    document = function_config.build(args)
    admin.send_form("PUT", _document_path(document), function_config.form(document))
    print("Updated successfully")


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(_function_path(args))
    print("Deleted successfully")


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_function_path(args)))


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    tenant, namespace = args.tenant or "public", args.namespace or "default"
    output.print_list(admin.get(f"{BASE}/{client.quote(tenant)}/{client.quote(namespace)}"))


def _status(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_instance_path(args) + "/status"))


def _stats(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_instance_path(args) + "/stats"))


def _control(action: str, done: str) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.post(f"{_instance_path(args)}/{action}")
        print(done)
    return run


def _trigger(admin: client.AdminClient, args: argparse.Namespace) -> None:
    if args.trigger_value is None and args.trigger_file is None:
        raise function_config.FunctionFlagError(
            "Either a trigger value or a trigger filepath needs to be specified")
    parts = []
    if args.trigger_file is not None:
        path = pathlib.Path(args.trigger_file)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise function_config.FunctionFlagError(
                f"cannot read {path}: {exc.strerror}") from exc
        parts.append(client.FormPart("dataStream", data, path.name, "application/octet-stream"))
    if args.trigger_value is not None:
        parts.append(client.FormPart("data", args.trigger_value.encode()))
    if args.topic:
        parts.append(client.FormPart("topic", _input_topic(args).encode()))
    reply = admin.send_form("POST", _function_path(args) + "/trigger", parts)
    print(reply.body.decode(errors="replace"))


def _input_topic(args: argparse.Namespace) -> str:
    """--topic as the full name the function's inputs are stored under."""
    tenant, namespace, _name = function_config.function_name(args)
    topic = str(args.topic)
    if "/" not in topic:
        topic = f"{tenant}/{namespace}/{topic}"
    try:
        return str(naming.TopicName.parse(topic))
    except naming.InvalidTopicNameError as exc:
        raise function_config.FunctionFlagError(f"Invalid topic name: {args.topic}") from exc


def _query_state(admin: client.AdminClient, args: argparse.Namespace) -> None:
    if not args.key:
        raise function_config.FunctionFlagError("State key needs to be specified")
    path = f"{_function_path(args)}/state/{client.quote(args.key)}"
    try:
        while True:
            try:
                output.print_json(admin.get(path))
            except client.AdminError as exc:
                if exc.status != 404 or not args.watch:
                    raise
                print(exc.reason, file=sys.stderr)
            if not args.watch:
                return
            sys.stdout.flush()
            time.sleep(WATCH_INTERVAL_S)
    except KeyboardInterrupt:
        return


def _put_state(admin: client.AdminClient, args: argparse.Namespace) -> None:
    try:
        state = json.loads(args.state)
    except ValueError as exc:
        raise function_config.FunctionFlagError(f"--state is not JSON: {exc}") from exc
    if not isinstance(state, dict) or not state.get("key"):
        raise function_config.FunctionFlagError(
            '--state is a FunctionState JSON with its key: {"key": ..., "stringValue": ...}')
    path = f"{_function_path(args)}/state/{client.quote(str(state['key']))}"
    admin.send_form("POST", path, [client.FormPart("state", json.dumps(state).encode(),
                                                   content_type="application/json")])


def _flag_errors(run: Run) -> Run:
    """A FunctionFlagError is a usage error: argparse prints it with the usage, status 2."""
    @functools.wraps(run)
    def checked(admin: client.AdminClient, args: argparse.Namespace) -> None:
        try:
            run(admin, args)
        except function_config.FunctionFlagError as exc:
            args.command_parser.error(str(exc))
    return checked


def register(groups: Any) -> None:
    group = Group(groups, "functions",
                  "Pulsar Functions: lightweight compute over topics (a functions worker serves "
                  "these calls; localrun runs one function here)")
    command = _commander(group)
    function_config.add_config_arguments(
        command("create", "Create a Pulsar Function in cluster mode", _create))
    function_config.add_config_arguments(
        command("update", "Update a Pulsar Function (only the flags given change)", _update))
    function_localrun.add_arguments(
        command("localrun", "Run a Pulsar Function here, in the foreground, without a worker",
                function_localrun.run))
    function_config.add_name_arguments(command("delete", "Delete a Pulsar Function", _delete))
    function_config.add_name_arguments(
        command("get", "Fetch the config of a Pulsar Function", _get))
    listing = command("list", "List the Pulsar Functions of a namespace", _list)
    listing.add_argument("--tenant", help="the tenant (default public)")
    listing.add_argument("--namespace", help="the namespace (default default)")
    for name, help_text, run, aliases in (
            ("status", "Check the current status of a Pulsar Function", _status, ["getstatus"]),
            ("stats", "Get the current stats of a Pulsar Function", _stats, []),
            ("start", "Start stopped instances", _control("start", "Started successfully"), []),
            ("stop", "Stop instances", _control("stop", "Stopped successfully"), []),
            ("restart", "Restart instances", _control("restart", "Restarted successfully"), [])):
        parser = command(name, help_text, run, aliases)
        function_config.add_name_arguments(parser)
        parser.add_argument("--instance-id", type=int,
                            help="one instance (default: all of them)")
    _add_trigger(command("trigger", "Trigger a Pulsar Function with a value", _trigger))
    querystate = command("querystate", "Fetch a key of a Pulsar Function's state", _query_state)
    function_config.add_name_arguments(querystate)
    querystate.add_argument("-k", "--key", help="the state key")
    querystate.add_argument("-w", "--watch", action="store_true",
                            help="read the key again every second until Ctrl-C")
    putstate = command("putstate", "Put a key of a Pulsar Function's state", _put_state)
    function_config.add_name_arguments(putstate)
    putstate.add_argument("-s", "--state", required=True,
                          help='a FunctionState JSON: {"key": "k", "stringValue": "v"} or '
                          '{"key": "k", "numberValue": 1}')


def _commander(group: Group) -> Callable[..., argparse.ArgumentParser]:
    def command(name: str, help_text: str, run: Run,
                aliases: list[str] | None = None) -> argparse.ArgumentParser:
        return group.command(name, help_text, _flag_errors(run), aliases or ())
    return command


def _add_trigger(parser: argparse.ArgumentParser) -> None:
    function_config.add_name_arguments(parser)
    parser.add_argument("--trigger-value", help="the value to send to the input")
    parser.add_argument("--triggerValue", dest="trigger_value", help=argparse.SUPPRESS)
    parser.add_argument("--trigger-file", help="a file holding the value to send")
    parser.add_argument("--triggerFile", dest="trigger_file", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help="the input to send it to (default: the first input)")
