"""`pulsar function-instance --config function.json`: run one instance of a Python function.

The config is the function.json the operator mounts (or the worker writes);
the instance id comes from --instance-id, else the ordinal of a StatefulSet
pod's name ($POD_NAME or $HOSTNAME ending in -N), else 0. Apache's own
instance flags (--instance_id, --function_id, --pulsar_serviceurl,
--metrics_port, ...) are accepted as aliases. SIGTERM stops it gracefully:
no new inputs, outputs in flight finish, then exit 0.

The official client wheel comes with the `functions` extra; this module
imports it only once the command runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import re
import signal
import sys
from collections.abc import Callable, Mapping

from pulsar_common import errors as common_errors
from pulsar_common import log_config, testing
from pulsar_common.cli import extras

from pulsar_functions import broker_client, config, errors

DEFAULT_METRICS_PORT = 9094
DEFAULT_SERVICE_URL = "pulsar://localhost:6650"
_ORDINAL = re.compile(r"-(\d+)$")


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("--config", required=True, type=pathlib.Path,
                        help="function.json: the function's config (operator or Apache keys)")
    parser.add_argument("--instance-id", "--instance_id", type=int, default=None,
                        help="this instance's id, 0..parallelism-1 (default: the ordinal of "
                        "$POD_NAME or $HOSTNAME name-N, else 0)")
    parser.add_argument("--service-url", "--pulsar_serviceurl", default=None,
                        help="broker service URL (default: brokerServiceUrl of the config, "
                        f"else {DEFAULT_SERVICE_URL})")
    parser.add_argument("--function-id", "--function_id", default="",
                        help="the function's id (default: derived from its name)")
    parser.add_argument("--function-version", "--function_version", default="0")
    parser.add_argument("--metrics-port", "--metrics_port", type=int,
                        default=DEFAULT_METRICS_PORT,
                        help="port of /metrics, /stats and /healthz (default %(default)s; "
                        "0 picks a free one)")
    parser.add_argument("--metrics-host", default="0.0.0.0",
                        help="address the metrics port binds (default %(default)s)")
    parser.add_argument("--secrets-provider", "--secrets_provider", default="environment",
                        choices=("environment", "cleartext", "file"),
                        help="where secrets are read (default %(default)s)")
    parser.add_argument("--secrets-dir", type=pathlib.Path, default=None,
                        help="directory of secret files for --secrets-provider file")
    parser.add_argument("--negative-ack-delay-ms", type=int, default=1000,
                        help="delay before an input the function failed on comes again "
                        "(default %(default)s)")
    parser.add_argument("--cluster-name", "--cluster_name", default="standalone")
    parser.add_argument("--client-conf", type=pathlib.Path, default=None,
                        help="client.conf-style file of how to connect to brokers (authPlugin, "
                        "authParams, tlsTrustCertsFilePath, ...); the functions worker writes "
                        "one readable by its user only")
    parser.add_argument("--client-auth-dir", type=pathlib.Path, default=None,
                        help="a mounted Secret with function-mesh's authSecret keys "
                        "(clientAuthenticationPlugin, clientAuthenticationParameters)")
    parser.add_argument("--client-tls-dir", type=pathlib.Path, default=None,
                        help="a mounted Secret with function-mesh's tlsSecret keys "
                        "(tlsTrustCertsFilePath, tlsAllowInsecureConnection, "
                        "tlsHostnameVerificationEnable)")
    parser.add_argument("--tls-trust-certs-file", default=None,
                        help="PEM CAs the brokers' certificates are checked against")
    parser.add_argument("--tls-allow-insecure", action="store_true", default=None,
                        help="accept broker certificates that do not verify")
    parser.add_argument("--tls-hostname-verification", choices=("true", "false"), default=None,
                        help="check the broker certificate's host name")
    parser.add_argument("--work-dir", type=pathlib.Path, default=None,
                        help="where code fetched from pyLocation is kept (default: beside "
                        "the config)")
    log_config.add_arguments(parser)
    return run


def instance_id_from(explicit: int | None, environ: Mapping[str, str]) -> int:
    if explicit is not None:
        return explicit
    for variable in ("POD_NAME", "HOSTNAME"):
        match = _ORDINAL.search(environ.get(variable, ""))
        if match:
            return int(match.group(1))
    return 0


def broker_client_settings(args: argparse.Namespace) -> broker_client.BrokerClientSettings:
    """How to connect to brokers: --client-conf, then the function-mesh Secret directories,
    then the TLS flags, each over the one before."""
    try:
        client = (broker_client.ANONYMOUS if args.client_conf is None
                  else broker_client.BrokerClientSettings.read(args.client_conf))
        client = broker_client.with_mesh_secrets(client, args.client_auth_dir, args.client_tls_dir)
    except OSError as exc:
        raise common_errors.ConfigError(f"cannot read the broker client settings: {exc}") from exc
    trust, insecure, hostname = (args.tls_trust_certs_file, args.tls_allow_insecure,
                                 args.tls_hostname_verification)
    client = dataclasses.replace(
        client,
        tls_trust_certs_file=client.tls_trust_certs_file if trust is None else str(trust),
        tls_allow_insecure=client.tls_allow_insecure if insecure is None else bool(insecure),
        tls_hostname_verification=client.tls_hostname_verification if hostname is None
        else hostname == "true")
    _ = client.credentials
    return client


def die_with_worker(environ: Mapping[str, str]) -> None:
    """Under a functions worker, stop when it dies (SIGTERM from the kernel), as a pod would."""
    parent = environ.get("PULSAR_FUNCTIONS_WORKER_PID")
    if not parent:
        return
    testing.die_with_parent()
    if os.getppid() != int(parent):
        # The worker died before the request took effect.
        raise SystemExit(1)


def run(args: argparse.Namespace) -> int:
    extras.require("functions", "pulsar")
    die_with_worker(os.environ)
    from pulsar_functions.instance import metrics, runner

    log_config.configure_from(args)
    try:
        function = config.loads(args.config.read_bytes())
    except OSError as exc:
        raise common_errors.ConfigError(f"cannot read {args.config}: {exc}") from exc
    except errors.InvalidFunctionConfigError as exc:
        raise common_errors.ConfigError(f"{args.config}: {exc}") from exc
    client = broker_client_settings(args)
    options = runner.InstanceOptions(
        instance_id=instance_id_from(args.instance_id, os.environ),
        service_url=args.service_url or function.broker_service_url or DEFAULT_SERVICE_URL,
        function_id=args.function_id, function_version=args.function_version,
        secrets_provider=args.secrets_provider, secrets_dir=args.secrets_dir,
        negative_ack_delay_ms=args.negative_ack_delay_ms,
        work_dir=args.work_dir or args.config.parent, cluster=args.cluster_name,
        client=client)
    instance = runner.FunctionInstance(function, options)
    server = metrics.MetricsServer(instance.stats, args.metrics_host, args.metrics_port)
    server.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: instance.stop())
    try:
        instance.start()
        status = instance.run()
    except errors.FunctionsError as exc:
        print(f"pulsar function-instance: {exc}", file=sys.stderr)
        status = 1
    finally:
        instance.close()
        server.stop()
    return status
