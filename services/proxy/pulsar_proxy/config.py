"""Proxy settings, read from a proxy.conf-style file with Apache Pulsar's key names.

Brokers are found either through the metadata store (`metadataStoreUrl`: the
brokers' registrations) or through fixed URLs (`brokerServiceURL` and
`brokerWebServiceURL`, usually a Kubernetes Service in front of the brokers);
the fixed URLs win when both are set, as in Apache's proxy.
"""

from __future__ import annotations

import dataclasses

from pulsar_common import config, errors
from pulsar_common.config import setting


@dataclasses.dataclass(frozen=True)
class ProxyConfig:
    """Settings by Apache key; checked in __post_init__ (an invalid value stops start-up)."""

    cluster_name: str = setting("clusterName", "", "Name of the cluster the proxy fronts")
    metadata_store_url: str = setting(
        "metadataStoreUrl", "", "etcd:http://host:2379: find brokers through their registrations")
    configuration_metadata_store_url: str = setting(
        "configurationMetadataStoreUrl", "", "Accepted for Apache compatibility; not read")
    metadata_store_session_timeout_millis: int = setting(
        "metadataStoreSessionTimeoutMillis", 30000, "Session timeout of the metadata store client")
    broker_service_url: str = setting(
        "brokerServiceURL", "", "pulsar://host:port of the brokers (wins over metadataStoreUrl)")
    broker_web_service_url: str = setting(
        "brokerWebServiceURL", "", "http://host:port of the brokers' admin API")
    bind_address: str = setting("bindAddress", "0.0.0.0", "Address the listeners bind to")
    advertised_address: str = setting(
        "advertisedAddress", "", "Host name the proxy is reached by (for logs and banners)")
    service_port: int = setting("servicePort", 6650, "Binary protocol port")
    web_service_port: int = setting("webServicePort", 8080, "HTTP port (admin, lookup, metrics)")
    max_concurrent_inbound_connections: int = setting(
        "maxConcurrentInboundConnections", 10000,
        "Client connections open at once; more are closed as they arrive")
    max_concurrent_inbound_connections_per_ip: int = setting(
        "maxConcurrentInboundConnectionsPerIp", 0,
        "Client connections open at once from one address (0: no limit)")
    max_concurrent_lookup_requests: int = setting(
        "maxConcurrentLookupRequests", 50000,
        "Lookups, partition metadata, topic list and schema requests in flight at once; "
        "more are refused with TooManyRequests")
    broker_proxy_allowed_target_ports: tuple[str, ...] = setting(
        "brokerProxyAllowedTargetPorts", ("6650", "6651"),
        "Broker ports a client may ask to be relayed to ('*' for any)")
    broker_proxy_allowed_host_names: tuple[str, ...] = setting(
        "brokerProxyAllowedHostNames", ("*",),
        "Broker host names a client may ask to be relayed to (patterns with '*')")
    keep_alive_interval_seconds: int = setting(
        "keepAliveIntervalSeconds", 30,
        "pulsar-py: ping idle lookup connections this often (0: never)")
    lookup_timeout_ms: int = setting(
        "brokerClient_operationTimeoutMs", 30000,
        "How long the proxy waits for a broker to answer a lookup or a connection attempt")
    max_message_size: int = setting(
        "maxMessageSize", 5 * 1024 * 1024,
        "pulsar-py: largest frame read on a lookup connection, bytes")
    max_http_request_body_bytes: int = setting(
        "httpMaxRequestBodySize", 5 * 1024 * 1024,
        "pulsar-py: largest admin request body forwarded, bytes")
    status_file_path: str = setting(
        "statusFilePath", "", "When set, /status.html answers 404 unless this file exists")

    def __post_init__(self) -> None:
        if not self.broker_service_url and not self.metadata_store_url:
            raise errors.ConfigError(
                "the proxy needs brokerServiceURL or metadataStoreUrl to find brokers")
        if self.broker_service_url and not self.broker_service_url.startswith("pulsar://"):
            raise errors.ConfigError("brokerServiceURL must start with pulsar://")
        if self.broker_web_service_url and not self.broker_web_service_url.startswith("http://"):
            raise errors.ConfigError("brokerWebServiceURL must start with http://")
        if self.broker_service_url and not self.broker_web_service_url \
                and not self.metadata_store_url:
            raise errors.ConfigError("brokerWebServiceURL is needed with brokerServiceURL "
                                     "when no metadataStoreUrl is set")
        for name, value in (("maxConcurrentInboundConnections",
                             self.max_concurrent_inbound_connections),
                            ("maxConcurrentLookupRequests", self.max_concurrent_lookup_requests),
                            ("brokerClient_operationTimeoutMs", self.lookup_timeout_ms),
                            ("maxMessageSize", self.max_message_size)):
            if value <= 0:
                raise errors.ConfigError(f"{name} must be positive")
        for port in self.broker_proxy_allowed_target_ports:
            if port != "*" and not port.isdigit():
                raise errors.ConfigError(
                    f"brokerProxyAllowedTargetPorts: {port!r} is neither a port nor '*'")


def load(path: str | None, overrides: dict[str, str] | None = None) -> ProxyConfig:
    return config.load(ProxyConfig, path, overrides)
