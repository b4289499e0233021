"""`pulsar-admin packages upload|download|get-metadata|update-metadata|list|list-versions|delete`.

Apache's commands and flags over `/admin/v3/packages`. A package is named
`type://tenant/namespace/name@version` (type function, sink or source; no
version means `latest`); `list` takes `--type` and a namespace. upload and
update-metadata take `--description` (required), `--contact` and
`-P/--properties key=value` (repeatable).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group

BASE = "/admin/v3/packages"
TYPES = ("function", "sink", "source")


def package_path(url: str, *, with_version: bool = True) -> str:
    """The REST path of `type://tenant/namespace/name[@version]` (412 when malformed)."""
    type_, separator, rest = url.partition("://")
    path, _, version = rest.partition("@")
    parts = path.split("/")
    if not separator or type_ not in TYPES or len(parts) != 3 or not all(parts) \
            or "@" in version:
        raise client.AdminError(412, f"Invalid package name '{url}'")
    segments = [type_, *parts] + ([version or "latest"] if with_version else [])
    return BASE + "/" + "/".join(client.quote(s) for s in segments)


def _metadata(args: argparse.Namespace) -> dict[str, Any]:
    properties = {}
    for item in args.properties or ():
        key, separator, value = item.partition("=")
        if not separator or not key:
            raise client.AdminError(400, f"--properties takes key=value, not {item!r}")
        properties[key] = value
    return {"description": args.description, "contact": args.contact,
            "properties": properties}


def _get_metadata(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(package_path(args.package) + "/metadata"))


def _update_metadata(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(package_path(args.package) + "/metadata", _metadata(args))
    print(f"The metadata of the package '{args.package}' updated successfully")


def _upload(admin: client.AdminClient, args: argparse.Namespace) -> None:
    try:
        data = pathlib.Path(args.path).read_bytes()
    except OSError as exc:
        raise client.AdminError(400, f"Cannot read {args.path}: {exc}") from exc
    admin.send_form("POST", package_path(args.package), [
        client.FormPart("file", data, os.path.basename(args.path), "application/octet-stream"),
        client.FormPart("metadata", json.dumps(_metadata(args)).encode(), None,
                        "application/json")])
    print(f"The package '{args.package}' uploaded from path '{args.path}' successfully")


def _download(admin: client.AdminClient, args: argparse.Namespace) -> None:
    reply = admin.request("GET", package_path(args.package))
    target = pathlib.Path(args.path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(reply.body)
    except OSError as exc:
        raise client.AdminError(400, f"Cannot write {args.path}: {exc}") from exc
    print(f"The package '{args.package}' downloaded to path '{args.path}' successfully")


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    tenant, separator, namespace = args.namespace.partition("/")
    if not separator or not tenant or not namespace or "/" in namespace:
        raise client.AdminError(412, f"Invalid namespace name: {args.namespace}")
    output.print_list(admin.get(f"{BASE}/{client.quote(args.type)}/{client.quote(tenant)}/"
                                f"{client.quote(namespace)}"))


def _list_versions(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(package_path(args.package, with_version=False)))


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(package_path(args.package))
    print(f"The package '{args.package}' deleted successfully")


def _metadata_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--description", required=True, help="description of the package")
    parser.add_argument("--contact", default=None, help="contact information of the package")
    parser.add_argument("-P", "--properties", action="append", metavar="KEY=VALUE",
                        help="a property of the package (repeatable)")


def register(groups: Any) -> None:
    group = Group(groups, "packages", "Operations about packages")
    name_help = "type://tenant/namespace/packageName@version"
    command = group.command("get-metadata", "Get a package metadata information.",
                            _get_metadata)
    command.add_argument("package", help=name_help)
    command = group.command("update-metadata", "Update a package metadata information.",
                            _update_metadata)
    command.add_argument("package", help=name_help)
    _metadata_flags(command)
    command = group.command("upload", "Upload a package", _upload)
    command.add_argument("package", help=name_help)
    _metadata_flags(command)
    command.add_argument("--path", required=True, help="the file to upload")
    command = group.command("download", "Download a package", _download)
    command.add_argument("package", help=name_help)
    command.add_argument("--path", required=True, help="where to write the package")
    command = group.command("list", "List all packages with given type in the specified "
                            "namespace", _list)
    command.add_argument("--type", required=True, choices=TYPES, help="type of the package")
    command.add_argument("namespace", help="tenant/namespace")
    command = group.command("list-versions", "List all versions of the given package",
                            _list_versions)
    command.add_argument("package", help="type://tenant/namespace/packageName")
    command = group.command("delete", "Delete a package", _delete)
    command.add_argument("package", help=name_help)
