"""`pulsar-admin clusters list|get|create|update|delete`, the peer-cluster and the
failure-domain commands. The ClusterData flags (URLs, proxy protocol, authentication, TLS)
are Apache's; the broker stores them (no geo-replication client uses them here)."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group

BASE = "/admin/v2/clusters"


def _cluster_data(args: argparse.Namespace) -> dict[str, Any]:
    fields = {"serviceUrl": args.url, "serviceUrlTls": args.url_secure,
              "brokerServiceUrl": args.broker_url, "brokerServiceUrlTls": args.broker_url_secure,
              "proxyServiceUrl": args.proxy_url, "proxyProtocol": args.proxy_protocol,
              "authenticationPlugin": args.cluster_auth_plugin,
              "authenticationParameters": args.cluster_auth_parameters,
              "brokerClientTlsEnabled": args.tls_enable,
              "tlsAllowInsecureConnection": args.cluster_tls_allow_insecure,
              "brokerClientTrustCertsFilePath": args.tls_trust_certs_filepath}
    return {key: value for key, value in fields.items() if value}


def _url_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cluster")
    parser.add_argument("--url", help="service-url (http://host:8080)")
    parser.add_argument("--url-secure", help="service-url for secure connection")
    parser.add_argument("--broker-url", help="broker-service-url (pulsar://host:6650)")
    parser.add_argument("--broker-url-secure", help="broker-service-url for secure connection")
    parser.add_argument("--proxy-url", help="proxy-service-url")
    parser.add_argument("--proxy-protocol", choices=["SNI"],
                        help="protocol to decide type of proxy routing")
    # Own dests: pulsar-admin's --auth-plugin and --tls-allow-insecure are the admin
    # client's own.
    parser.add_argument("--auth-plugin", dest="cluster_auth_plugin",
                        help="authentication plugin")
    parser.add_argument("--auth-parameters", dest="cluster_auth_parameters",
                        help="authentication parameters")
    parser.add_argument("--tls-enable", action="store_true", help="Enable tls connection")
    parser.add_argument("--tls-allow-insecure", dest="cluster_tls_allow_insecure",
                        action="store_true",
                        help="Allow insecure tls connection")
    parser.add_argument("--tls-trust-certs-filepath",
                        help="path for the trusted TLS certificate file")


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(BASE))


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/{client.quote(args.cluster)}"))


def _create(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(f"{BASE}/{client.quote(args.cluster)}", _cluster_data(args))


def _update(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{BASE}/{client.quote(args.cluster)}", _cluster_data(args))


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(f"{BASE}/{client.quote(args.cluster)}")


def _get_peers(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/{client.quote(args.cluster)}/peers"))


def _update_peers(admin: client.AdminClient, args: argparse.Namespace) -> None:
    peers = [p.strip() for p in (args.peer_clusters or "").split(",") if p.strip()]
    admin.post(f"{BASE}/{client.quote(args.cluster)}/peers", peers or None)


def _domain_url(args: argparse.Namespace) -> str:
    return (f"{BASE}/{client.quote(args.cluster)}/failureDomains/"
            f"{client.quote(args.domain_name)}")


def _set_domain(admin: client.AdminClient, args: argparse.Namespace) -> None:
    brokers = [b.strip() for b in args.broker_list.split(",") if b.strip()]
    admin.post(_domain_url(args), {"brokers": brokers})


def _get_domain(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_domain_url(args)))


def _delete_domain(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(_domain_url(args))


def _list_domains(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/{client.quote(args.cluster)}/failureDomains"))


def _domain_command(group: Group, name: str, help_text: str, run: Any,
                    with_brokers: bool = False) -> None:
    parser = group.command(name, help_text, run)
    parser.add_argument("cluster")
    parser.add_argument("--domain-name", required=True, help="name of the failure domain")
    if with_brokers:
        parser.add_argument("--broker-list", required=True,
                            help="comma separated brokers (host:port) of the domain")


def register(groups: Any) -> None:
    group = Group(groups, "clusters", "Operations about clusters")
    group.command("list", "List the existing clusters", _list)
    group.command("get", "Get the configuration data for the specified cluster",
                  _get).add_argument("cluster")
    _url_options(group.command("create", "Provisions a new cluster", _create))
    _url_options(group.command("update", "Update the configuration for a cluster", _update))
    group.command("delete", "Deletes an existing cluster", _delete).add_argument("cluster")
    _domain_command(group, "create-failure-domain", "Create a new failure domain for a cluster",
                    _set_domain, with_brokers=True)
    _domain_command(group, "update-failure-domain", "Update the brokers of a failure domain",
                    _set_domain, with_brokers=True)
    _domain_command(group, "get-failure-domain", "Get the brokers of a failure domain",
                    _get_domain)
    _domain_command(group, "delete-failure-domain", "Delete a failure domain", _delete_domain)
    group.command("list-failure-domains", "List the failure domains of a cluster",
                  _list_domains).add_argument("cluster")
    group.command("get-peer-clusters", "Get list of peer-clusters",
                  _get_peers).add_argument("cluster")
    update_peers = group.command("update-peer-clusters", "Update peer cluster names",
                                 _update_peers)
    update_peers.add_argument("cluster")
    update_peers.add_argument("--peer-clusters", required=True,
                              help='comma separated peer-cluster names (pass "" to clear them)')
