"""Proxy settings, read from a proxy.conf-style file with Apache Pulsar's key names.

Brokers are found either through the metadata store (`metadataStoreUrl`: the
brokers' registrations) or through fixed URLs (`brokerServiceURL` and
`brokerWebServiceURL`, usually a Kubernetes Service in front of the brokers);
the fixed URLs win when both are set, as in Apache's proxy.
"""

from __future__ import annotations

import dataclasses

from pulsar_common import client_auth, config, errors
from pulsar_common import tls as common_tls
from pulsar_common.auth import service as auth_service
from pulsar_common.config import setting


@dataclasses.dataclass(frozen=True)
class ProxyConfig:
    """Settings by Apache key; checked in __post_init__ (an invalid value stops start-up)."""

    cluster_name: str = setting("clusterName", "", "Name of the cluster the proxy fronts")
    metadata_store_url: str = setting(
        "metadataStoreUrl", "", "etcd:http://host:2379: find brokers through their registrations")
    configuration_metadata_store_url: str = setting(
        "configurationMetadataStoreUrl", "", "Accepted for Apache compatibility; not read")
    metadata_store_config_path: str = setting(
        "metadataStoreConfigPath", "",
        "File with the metadata store client's settings (etcd over TLS: useTls, "
        "tlsTrustCertsFilePath, tlsCertificateFilePath, tlsKeyFilePath, authority)")
    metadata_store_session_timeout_millis: int = setting(
        "metadataStoreSessionTimeoutMillis", 30000, "Session timeout of the metadata store client")
    broker_service_url: str = setting(
        "brokerServiceURL", "", "pulsar://host:port of the brokers (wins over metadataStoreUrl)")
    broker_web_service_url: str = setting(
        "brokerWebServiceURL", "", "http://host:port of the brokers' admin API")
    bind_address: str = setting("bindAddress", "0.0.0.0", "Address the listeners bind to")
    advertised_address: str = setting(
        "advertisedAddress", "", "Host name the proxy is reached by (for logs and banners)")
    service_port: int | None = setting(
        "servicePort", 6650, "Binary protocol port (empty: no plain-text port)",
        empty_is_none=True)
    web_service_port: int | None = setting(
        "webServicePort", 8080, "HTTP port (admin, lookup, metrics; empty: no plain HTTP)",
        empty_is_none=True)
    # TLS towards clients (see docs/security.md).
    service_port_tls: int | None = setting(
        "servicePortTls", None, "Binary protocol over TLS port (pulsar+ssl://), e.g. 6651")
    web_service_port_tls: int | None = setting(
        "webServicePortTls", None, "HTTPS port, e.g. 8443")
    tls_certificate_file_path: str = setting(
        "tlsCertificateFilePath", "", "PEM certificate (chain) the TLS ports present")
    tls_key_file_path: str = setting("tlsKeyFilePath", "", "PEM private key of the certificate")
    tls_trust_certs_file_path: str = setting(
        "tlsTrustCertsFilePath", "", "PEM CA certificates client certificates are checked against")
    tls_allow_insecure_connection: bool = setting(
        "tlsAllowInsecureConnection", False,
        "Do not check client certificates (none is asked for, so TLS authentication is off)")
    tls_require_trusted_client_cert_on_connect: bool = setting(
        "tlsRequireTrustedClientCertOnConnect", False,
        "Refuse TLS clients without a certificate signed by tlsTrustCertsFilePath")
    tls_protocols: tuple[str, ...] = setting(
        "tlsProtocols", (), "TLS versions accepted, e.g. TLSv1.3,TLSv1.2 (empty: TLSv1.2 and up)")
    tls_ciphers: tuple[str, ...] = setting(
        "tlsCiphers", (), "OpenSSL cipher names for TLSv1.2 (empty: OpenSSL's defaults)")
    tls_cert_refresh_check_duration_sec: int = setting(
        "tlsCertRefreshCheckDurationSec", 300,
        "How often the TLS files are checked for changes; new connections use new files")
    # TLS and credentials towards brokers.
    tls_enabled_with_broker: bool = setting(
        "tlsEnabledWithBroker", False,
        "Connect to brokers' TLS ports (brokerServiceURLTLS / their pulsar+ssl:// URLs)")
    broker_service_url_tls: str = setting(
        "brokerServiceURLTLS", "", "pulsar+ssl://host:port of the brokers, with tlsEnabledWithBroker")
    broker_web_service_url_tls: str = setting(
        "brokerWebServiceURLTLS", "", "https://host:port of the brokers, with tlsEnabledWithBroker")
    broker_client_trust_certs_file_path: str = setting(
        "brokerClientTrustCertsFilePath", "", "PEM CA certificates brokers' certificates are "
        "checked against (empty: tlsTrustCertsFilePath)")
    broker_client_certificate_file_path: str = setting(
        "brokerClientCertificateFilePath", "", "Client certificate the proxy shows brokers")
    broker_client_key_file_path: str = setting(
        "brokerClientKeyFilePath", "", "Key of brokerClientCertificateFilePath")
    tls_hostname_verification_enabled: bool = setting(
        "tlsHostnameVerificationEnabled", False,
        "Check that a broker's certificate names the host the proxy connects to")
    broker_client_authentication_plugin: str = setting(
        "brokerClientAuthenticationPlugin", "",
        "How the proxy authenticates to brokers, e.g. "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken")
    broker_client_authentication_parameters: str = setting(
        "brokerClientAuthenticationParameters", "", "Parameters of brokerClientAuthenticationPlugin")
    # Authentication of clients (the same providers and keys as the broker's).
    authentication_enabled: bool = setting(
        "authenticationEnabled", False, "Authenticate clients on CONNECT and HTTP requests")
    authentication_providers: tuple[str, ...] = setting(
        "authenticationProviders", (),
        "Apache's provider class names, e.g. "
        "org.apache.pulsar.broker.authentication.AuthenticationProviderToken")
    anonymous_user_role: str = setting(
        "anonymousUserRole", "", "Role of clients without credentials (empty: refused)")
    token_secret_key: str = setting("tokenSecretKey", "", "HS256 key: file:///path or data:...")
    token_public_key: str = setting("tokenPublicKey", "", "RS256/ES256 key: file:///path or data:")
    token_public_alg: str = setting("tokenPublicAlg", "RS256", "Algorithm of tokenPublicKey")
    token_auth_claim: str = setting("tokenAuthClaim", "", "Claim holding the role (default sub)")
    token_audience_claim: str = setting("tokenAudienceClaim", "", "Claim holding the audience")
    token_audience: str = setting("tokenAudience", "", "Audience this proxy accepts")
    basic_auth_conf: str = setting(
        "basicAuthConf", "", "htpasswd file (path, or its contents base64-encoded)")
    forward_authorization_credentials: bool = setting(
        "forwardAuthorizationCredentials", False,
        "Pass each client's auth method and data to the broker (original_auth_method/data)")
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
        if not self.fixed_brokers and not self.metadata_store_url:
            raise errors.ConfigError(
                "the proxy needs brokerServiceURL (or brokerServiceURLTLS) or metadataStoreUrl "
                "to find brokers")
        if self.broker_service_url and not self.broker_service_url.startswith("pulsar://"):
            raise errors.ConfigError("brokerServiceURL must start with pulsar://")
        if self.broker_web_service_url and not self.broker_web_service_url.startswith("http://"):
            raise errors.ConfigError("brokerWebServiceURL must start with http://")
        self._check_tls()
        if self.fixed_brokers and not self.fixed_web_brokers and not self.metadata_store_url:
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

    def _check_tls(self) -> None:
        if self.service_port is None and self.service_port_tls is None:
            raise errors.ConfigError("servicePort and servicePortTls are both unset")
        if self.web_service_port is None and self.web_service_port_tls is None:
            raise errors.ConfigError("webServicePort and webServicePortTls are both unset")
        if self.tls_enabled and (not self.tls_certificate_file_path
                                 or not self.tls_key_file_path):
            raise errors.ConfigError("a TLS port is set: tlsCertificateFilePath and "
                                     "tlsKeyFilePath are required")
        if self.tls_require_trusted_client_cert_on_connect and not self.tls_trust_certs_file_path:
            raise errors.ConfigError("tlsRequireTrustedClientCertOnConnect needs "
                                     "tlsTrustCertsFilePath")
        common_tls.check_protocols(self.tls_protocols)
        if self.broker_service_url_tls and not self.broker_service_url_tls.startswith(
                "pulsar+ssl://"):
            raise errors.ConfigError("brokerServiceURLTLS must start with pulsar+ssl://")
        if self.broker_web_service_url_tls and not self.broker_web_service_url_tls.startswith(
                "https://"):
            raise errors.ConfigError("brokerWebServiceURLTLS must start with https://")
        if self.tls_enabled_with_broker and self.broker_service_url \
                and not self.broker_service_url_tls:
            raise errors.ConfigError("tlsEnabledWithBroker with brokerServiceURL needs "
                                     "brokerServiceURLTLS")
        if not self.tls_enabled_with_broker and self.broker_service_url_tls \
                and not self.broker_service_url:
            raise errors.ConfigError("brokerServiceURLTLS is used with tlsEnabledWithBroker=true")
        client_auth.credentials(self.broker_client_authentication_plugin,
                                self.broker_client_authentication_parameters)

    @property
    def fixed_brokers(self) -> bool:
        """Brokers are reached at fixed URLs (else through their registrations)."""
        return bool(self.broker_service_url or self.broker_service_url_tls)

    @property
    def fixed_web_brokers(self) -> bool:
        return bool(self.broker_web_service_url or self.broker_web_service_url_tls)

    @property
    def tls_enabled(self) -> bool:
        return self.service_port_tls is not None or self.web_service_port_tls is not None

    @property
    def tls(self) -> common_tls.TlsSettings:
        """The client-facing TLS ports' settings."""
        return common_tls.TlsSettings(
            cert_file=self.tls_certificate_file_path, key_file=self.tls_key_file_path,
            trust_certs_file=self.tls_trust_certs_file_path,
            allow_insecure_connection=self.tls_allow_insecure_connection,
            require_trusted_client_cert=self.tls_require_trusted_client_cert_on_connect,
            protocols=self.tls_protocols, ciphers=self.tls_ciphers)

    @property
    def broker_tls(self) -> common_tls.TlsSettings:
        """How the proxy's TLS connections to brokers check them (and show its certificate:
        brokerClientCertificateFilePath, or the AuthenticationTls plugin's files)."""
        found = self.broker_credentials
        cert, key = self.broker_client_certificate_file_path, self.broker_client_key_file_path
        if found is not None and found.method == "tls":
            cert, key = found.tls_cert_file, found.tls_key_file
        return common_tls.TlsSettings(
            cert_file=cert, key_file=key,
            trust_certs_file=(self.broker_client_trust_certs_file_path
                              or self.tls_trust_certs_file_path),
            hostname_verification=self.tls_hostname_verification_enabled,
            protocols=self.tls_protocols, ciphers=self.tls_ciphers)

    @property
    def authentication(self) -> auth_service.AuthenticationSettings:
        return auth_service.AuthenticationSettings(
            providers=self.authentication_providers,
            anonymous_user_role=self.anonymous_user_role,
            token_secret_key=self.token_secret_key, token_public_key=self.token_public_key,
            token_public_alg=self.token_public_alg, token_auth_claim=self.token_auth_claim,
            token_audience_claim=self.token_audience_claim, token_audience=self.token_audience,
            basic_auth_conf=self.basic_auth_conf)

    @property
    def broker_credentials(self) -> client_auth.Credentials | None:
        return client_auth.credentials(self.broker_client_authentication_plugin,
                                       self.broker_client_authentication_parameters)


def load(path: str | None, overrides: dict[str, str] | None = None) -> ProxyConfig:
    return config.load(ProxyConfig, path, overrides)
