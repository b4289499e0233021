"""The flags of `pulsar-admin functions create|update|localrun`, turned into Apache's FunctionConfig.

Apache's spellings are accepted, and its deprecated camelCase aliases
(`--className`, `--processingGuarantees`, ...) too, hidden from --help. A
`--function-config-file` (YAML with FunctionConfig's keys) is read first and
the flags given replace its keys. Only what is set is sent, so an update
changes just those keys (the worker merges them into the stored config).
The function is named by `--fqfn tenant/namespace/name` or by `--tenant`,
`--namespace`, `--name`; a missing name is the class name's last part.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import urllib.parse
from typing import Any

from pulsar_client_tools.admin import client

#: Schemes of a `--py` the worker (or the instance) fetches itself instead of an upload.
CODE_URL_SCHEMES = ("http", "https", "file", "function", "sink", "source")
GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
POSITIONS = ("Latest", "Earliest")


class FunctionFlagError(Exception):
    """A flag's value (or the combination of flags) is not a valid function config."""


def boolean(text: str) -> bool:
    """Apache's arity-1 booleans: `--auto-ack false`."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _topic_list(text: str) -> list[str]:
    return [topic.strip() for topic in text.split(",") if topic.strip()]


def _guarantee(text: str) -> str:
    if text.upper() not in GUARANTEES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(GUARANTEES)}")
    return text.upper()


def _position(text: str) -> str:
    for position in POSITIONS:
        if position.lower() == text.lower():
            return position
    raise argparse.ArgumentTypeError("expected Latest or Earliest")


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag: its Apache spellings and the FunctionConfig key it sets."""

    option: str
    key: str
    help: str
    type: Any = str
    deprecated: tuple[str, ...] = ()
    short: tuple[str, ...] = ()
    #: Booleans written bare (`--retain-ordering`) or with a value (`--retain-ordering false`).
    optional_value: bool = False

    @property
    def dest(self) -> str:
        return "fc_" + self.option.lstrip("-").replace("-", "_")

    @property
    def metavar(self) -> str:
        return "BOOL" if self.type is boolean else self.option.lstrip("-").upper().replace("-", "_")


FLAGS = (
    Flag("--classname", "className", "the function's class: module.Class or module.function",
         deprecated=("--className",)),
    Flag("--py", "py", "the function's code: a .py, .zip or .whl file (uploaded), an "
         "http(s):// or file:// URL the instance fetches, or a package of the brokers "
         "(function://tenant/namespace/name@version, see `pulsar-admin packages`)"),
    Flag("--inputs", "inputs", "input topics, comma separated", _topic_list, short=("-i",)),
    Flag("--topics-pattern", "topicsPattern", "a regex of input topics in the namespace",
         deprecated=("--topicsPattern",)),
    Flag("--output", "output", "the output topic (none: return values are not published)",
         short=("-o",)),
    Flag("--log-topic", "logTopic", "the topic the function's log records also go to",
         deprecated=("--logTopic",)),
    Flag("--schema-type", "outputSchemaType", "the output's schema type (STRING, BYTES, JSON, "
         "AVRO, or a module.Class of pulsar.schema.Schema)", short=("-st",)),
    Flag("--input-type-class-name", "inputTypeClassName",
         "the pulsar.schema.Record class of AVRO / JSON inputs (module.Class)"),
    Flag("--output-type-class-name", "outputTypeClassName",
         "the pulsar.schema.Record class of an AVRO / JSON output (module.Class)"),
    Flag("--custom-serde-inputs", "customSerdeInputs", "input topic -> SerDe class (JSON)",
         _json_object, deprecated=("--customSerdeInputs",)),
    Flag("--custom-schema-inputs", "customSchemaInputs", "input topic -> schema type (JSON)",
         _json_object),
    Flag("--input-specs", "inputSpecs", "input topic -> consumer config (JSON)", _json_object),
    Flag("--output-serde-classname", "outputSerdeClassName", "the output's SerDe class",
         deprecated=("--outputSerdeClassName",)),
    Flag("--processing-guarantees", "processingGuarantees",
         f"one of {', '.join(GUARANTEES)} (default ATLEAST_ONCE)", _guarantee,
         deprecated=("--processingGuarantees",)),
    Flag("--user-config", "userConfig", "user config key/values (JSON)", _json_object,
         deprecated=("--userConfig",)),
    Flag("--secrets", "secrets", "secret name -> where the secrets provider finds it (JSON)",
         _json_object),
    Flag("--retain-ordering", "retainOrdering", "process inputs in order (Failover)", boolean,
         deprecated=("--retainOrdering",), optional_value=True),
    Flag("--subs-name", "subName", "the input subscription (default tenant/namespace/name)"),
    Flag("--subs-position", "subscriptionPosition", "Latest (default) or Earliest", _position),
    Flag("--parallelism", "parallelism", "how many instances run (default 1)", int),
    Flag("--auto-ack", "autoAck", "true (default) or false: the function acknowledges itself",
         boolean, deprecated=("--autoAck",)),
    Flag("--timeout-ms", "timeoutMs", "inputs not acknowledged in time come again", int,
         deprecated=("--timeoutMs",)),
    Flag("--max-message-retries", "maxMessageRetries",
         "how often a failed input comes again before the dead-letter topic", int),
    Flag("--dead-letter-topic", "deadLetterTopic", "where inputs go after the last retry"),
    Flag("--cleanup-subscription", "cleanupSubscription",
         "delete the input subscription with the function", boolean, optional_value=True),
)

#: Resources are accepted and stored; the process runtime does not limit instances by them.
RESOURCE_FLAGS = (("--cpu", "cpu", float), ("--ram", "ram", int), ("--disk", "disk", int))


def add_name_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fqfn", help="the function as tenant/namespace/name")
    parser.add_argument("--tenant", help="the function's tenant (default public)")
    parser.add_argument("--namespace", help="the function's namespace (default default)")
    parser.add_argument("--name", help="the function's name")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of create, update and localrun."""
    add_name_arguments(parser)
    parser.add_argument("--function-config-file", dest="function_config_file",
                        help="a YAML file of FunctionConfig keys (flags override them)")
    parser.add_argument("--functionConfigFile", dest="function_config_file",
                        help=argparse.SUPPRESS)
    for flag in FLAGS:
        extra: dict[str, Any] = {"nargs": "?", "const": True} if flag.optional_value else {}
        parser.add_argument(*flag.short, flag.option, dest=flag.dest, type=flag.type,
                            metavar=flag.metavar, help=flag.help, **extra)
        for alias in flag.deprecated:
            parser.add_argument(alias, dest=flag.dest, type=flag.type,
                                help=argparse.SUPPRESS, **extra)
    for option, _key, kind in RESOURCE_FLAGS:
        parser.add_argument(option, type=kind, help=f"{option[2:]} per instance (stored only)")
    parser.add_argument("--jar", help=argparse.SUPPRESS)
    parser.add_argument("--go", help=argparse.SUPPRESS)


def function_name(args: argparse.Namespace) -> tuple[str, str, str]:
    """(tenant, namespace, name) of a command naming one function (--fqfn or --name...)."""
    parts = _fqfn_parts(args)
    if parts is not None:
        return parts
    if args.name is None:
        raise FunctionFlagError("You must specify a name for the function or a Fully "
                                "Qualified Function Name (FQFN)")
    return args.tenant or "public", args.namespace or "default", args.name


def _fqfn_parts(args: argparse.Namespace) -> tuple[str, str, str] | None:
    if args.fqfn is None:
        return None
    if any(part is not None for part in (args.tenant, args.namespace, args.name)):
        raise FunctionFlagError("You must specify either a Fully Qualified Function Name "
                                "(FQFN) or tenant, namespace, and function name")
    return _split_fqfn(args.fqfn)


def _split_fqfn(fqfn: str) -> tuple[str, str, str]:
    parts = fqfn.split("/")
    if len(parts) != 3 or not all(parts):
        raise FunctionFlagError(
            "Fully qualified function names (FQFNs) must be of the form tenant/namespace/name")
    return parts[0], parts[1], parts[2]


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The FunctionConfig JSON the flags (over --function-config-file) describe, named."""
    if args.jar is not None or args.go is not None:
        raise FunctionFlagError("Only Python functions run here: give the code with --py")
    document = load_file(args.function_config_file) if args.function_config_file else {}
    parts = _fqfn_parts(args)
    if parts is not None:
        document["tenant"], document["namespace"], document["name"] = parts
    for key in ("tenant", "namespace", "name"):
        if getattr(args, key) is not None:
            document[key] = getattr(args, key)
    for flag in FLAGS:
        value = getattr(args, flag.dest)
        if value is not None:
            document[flag.key] = value
    resources = {key: getattr(args, option[2:]) for option, key, _kind in RESOURCE_FLAGS
                 if getattr(args, option[2:]) is not None}
    if resources:
        document["resources"] = {**document.get("resources", {}), **resources}
    return _named(document)


def _named(document: dict[str, Any]) -> dict[str, Any]:
    """Apache's inference: the name from the class name, tenant public, namespace default."""
    if not document.get("name") and document.get("className"):
        document["name"] = str(document["className"]).rsplit(".", 1)[-1]
    if not document.get("name"):
        raise FunctionFlagError("No Function name specified")
    document["tenant"] = document.get("tenant") or "public"
    document["namespace"] = document.get("namespace") or "default"
    return document


def check_complete(document: dict[str, Any]) -> None:
    """What create and localrun need that update does not: a class name and the code."""
    if not document.get("className"):
        raise FunctionFlagError("No Function Classname specified")
    if not document.get("py"):
        raise FunctionFlagError("A Python file needs to be specified for the function: --py")
    if code_url(document) is None and not pathlib.Path(str(document["py"])).is_file():
        raise FunctionFlagError("The specified python file does not exist")


def code_url(document: dict[str, Any]) -> str | None:
    """The `--py` when it names a URL (the worker fetches it), else None."""
    py = document.get("py")
    if py and urllib.parse.urlsplit(str(py)).scheme in CODE_URL_SCHEMES:
        return str(py)
    return None


def form(document: dict[str, Any]) -> list[client.FormPart]:
    """The multipart parts Apache's client sends: functionConfig, and data (a file) or url."""
    parts = [client.FormPart("functionConfig", json.dumps(document).encode(),
                             content_type="application/json")]
    url = code_url(document)
    if url is not None:
        parts.append(client.FormPart("url", url.encode()))
    elif document.get("py"):
        path = pathlib.Path(str(document["py"]))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FunctionFlagError(f"cannot read {path}: {exc.strerror}") from exc
        parts.append(client.FormPart("data", data, path.name, "application/octet-stream"))
    return parts


def load_file(path: str) -> dict[str, Any]:
    """A --function-config-file: YAML (needs PyYAML), or JSON, which YAML includes."""
    try:
        text = pathlib.Path(path).read_text()
    except OSError as exc:
        raise FunctionFlagError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        import yaml
    except ImportError:
        loaded = _json_file(path, text)
    else:
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise FunctionFlagError(f"{path} is not YAML: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise FunctionFlagError(f"{path} must hold a mapping of FunctionConfig keys")
    return loaded


def _json_file(path: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise FunctionFlagError(
            f"{path} is not JSON, and reading YAML needs PyYAML (pip install PyYAML)") from exc
