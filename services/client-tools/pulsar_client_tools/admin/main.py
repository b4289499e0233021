"""`pulsar-admin <group> <command> ...`: the entry point and the shared argument plumbing.

The admin URL comes from --admin-url, else PULSAR_ADMIN_URL, else client.conf's
webServiceUrl, else http://localhost:8080. Credentials and TLS trust come from
--auth-plugin/--auth-params/--tls-* or client.conf (see
pulsar_client_tools.client.security). A failed call prints the broker's reason
the way Apache's pulsar-admin does and exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pulsar_common import errors as common_errors

from pulsar_client_tools import pipes
from pulsar_client_tools.admin import (
    bookies,
    broker_stats,
    brokers,
    client,
    clusters,
    functions,
    namespaces,
    ns_isolation_policy,
    output,
    packages,
    resource_quotas,
    schemas,
    tenants,
    topic_policies,
    topics,
    units,
)
from pulsar_client_tools.client import security

DEFAULT_ADMIN_URL = "http://localhost:8080"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsar-admin", description="Administer a Pulsar cluster through its admin REST API.")
    parser.add_argument(
        "--admin-url", "--url", dest="admin_url", default=None,
        help="broker web service URL (default: $PULSAR_ADMIN_URL, client.conf webServiceUrl "
             f"or {DEFAULT_ADMIN_URL})")
    security.add_arguments(parser, ("--tls-trust-cert-path",))
    groups = parser.add_subparsers(dest="group", metavar="<group>")
    for module in (clusters, tenants, namespaces, topics, topic_policies, brokers, broker_stats,
                   bookies, schemas, functions, packages, resource_quotas, ns_isolation_policy):
        module.register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        chosen = getattr(args, "group_parser", parser)
        chosen.print_help()
        return 1
    try:
        options = security.resolve(args)
        args.admin_url = (args.admin_url or os.environ.get("PULSAR_ADMIN_URL")
                          or options.web_service_url or DEFAULT_ADMIN_URL)
        admin = client.AdminClient(args.admin_url, headers=options.http_headers(),
                                   ssl_context=options.http_ssl_context())
    except common_errors.ConfigError as exc:
        output.print_error(str(exc))
        return 1
    try:
        run(admin, args)
    except client.AdminError as exc:
        if exc.status == client.CONNECT_FAILED:
            output.print_connect_error(exc.reason, args.admin_url)
        else:
            output.print_error(exc.reason)
        return 1
    except units.UnitError as exc:
        output.print_error(str(exc))
        return 1
    except BrokenPipeError:
        pipes.reader_gone()
    return 0


if __name__ == "__main__":
    sys.exit(main())
