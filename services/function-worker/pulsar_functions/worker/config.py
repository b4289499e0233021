"""Worker settings, by the keys of Apache's functions_worker.yml (as `key=value` lines)."""

from __future__ import annotations

import dataclasses

from pulsar_common.auth import service as auth_service
from pulsar_common.config import setting

from pulsar_functions import broker_client


@dataclasses.dataclass(frozen=True)
class WorkerConfig:
    worker_id: str = setting("workerId", "", "This worker's id (default host:port)")
    worker_hostname: str = setting("workerHostname", "127.0.0.1",
                                   "Host name other workers and instances reach this one by")
    worker_port: int = setting("workerPort", 6750, "HTTP port of the REST API")
    bind_address: str = setting("bindAddress", "0.0.0.0", "Address the REST API binds")
    metadata_store_url: str = setting(
        "configurationMetadataStoreUrl", "", "Metadata store of function records (etcd:...)")
    pulsar_service_url: str = setting("pulsarServiceUrl", "pulsar://localhost:6650",
                                      "Broker service URL the instances use")
    pulsar_web_service_url: str = setting("pulsarWebServiceUrl", "http://localhost:8080",
                                          "Broker admin URL")
    cluster: str = setting("pulsarFunctionsCluster", "standalone", "Cluster name")
    data_dir: str = setting("downloadDirectory", "data/functions",
                            "Where instance configs and code are written")
    session_timeout_ms: int = setting("metadataStoreSessionTimeoutMillis", 30000,
                                      "Session of this worker's membership and leadership")
    package_max_bytes: int = setting("maxPackageSizeBytes", 1 << 20,
                                     "Largest function code accepted (kept in the metadata store)")
    state_compaction_threshold_bytes: int = setting(
        "functionStateCompactionThresholdBytes", 1 << 20,
        "pulsar-py: the compactionThreshold set on a new function's state topic, so brokers "
        "compact it once that many bytes follow the last compaction (0: leave it unset)")

    # Security, by Apache's functions_worker keys (docs/security.md, "Functions").
    authentication_enabled: bool = setting(
        "authenticationEnabled", False, "REST requests must authenticate")
    authentication_providers: tuple[str, ...] = setting(
        "authenticationProviders", (),
        "Provider class names (org.apache.pulsar.broker.authentication."
        "AuthenticationProviderToken, ...Basic) or method names token, basic")
    authorization_enabled: bool = setting(
        "authorizationEnabled", False,
        "A role needs superuser, tenant admin or the namespace's functions permission")
    super_user_roles: tuple[str, ...] = setting(
        "superUserRoles", (), "Roles allowed everything (comma separated)")
    proxy_roles: tuple[str, ...] = setting(
        "proxyRoles", (),
        "Roles (proxies, brokers) whose requests may name the client in X-Original-Principal")
    anonymous_user_role: str = setting(
        "anonymousUserRole", "", "Role of requests without credentials (empty: refuse them)")
    token_secret_key: str = setting("tokenSecretKey", "", "HMAC key of the token method")
    token_public_key: str = setting("tokenPublicKey", "", "Public key of the token method")
    token_public_alg: str = setting("tokenPublicAlg", "RS256", "Algorithm of tokenPublicKey")
    token_auth_claim: str = setting("tokenAuthClaim", "", "Claim holding the role (empty: sub)")
    token_audience_claim: str = setting("tokenAudienceClaim", "", "Claim of the audiences")
    token_audience: str = setting("tokenAudience", "", "Audience tokenAudienceClaim must hold")
    basic_auth_conf: str = setting("basicAuthConf", "", "htpasswd-style users of basic")
    broker_client_authentication_plugin: str = setting(
        "brokerClientAuthenticationPlugin", "",
        "How the worker and its instances authenticate to brokers, e.g. "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken")
    broker_client_authentication_parameters: str = setting(
        "brokerClientAuthenticationParameters", "",
        "Parameters of brokerClientAuthenticationPlugin, e.g. file:///path/to/token")
    tls_trust_certs_file_path: str = setting(
        "tlsTrustCertsFilePath", "", "PEM CAs the brokers' certificates are checked against")
    tls_allow_insecure_connection: bool = setting(
        "tlsAllowInsecureConnection", False, "Accept broker certificates that do not verify")
    tls_enable_hostname_verification: bool = setting(
        "tlsEnableHostnameVerification", False, "Check the broker certificate's host name")

    @property
    def broker_client_settings(self) -> broker_client.BrokerClientSettings:
        return broker_client.BrokerClientSettings(
            self.broker_client_authentication_plugin,
            self.broker_client_authentication_parameters, self.tls_trust_certs_file_path,
            self.tls_allow_insecure_connection, self.tls_enable_hostname_verification)

    @property
    def authentication_settings(self) -> auth_service.AuthenticationSettings:
        return auth_service.AuthenticationSettings(
            providers=self.authentication_providers,
            anonymous_user_role=self.anonymous_user_role,
            token_secret_key=self.token_secret_key, token_public_key=self.token_public_key,
            token_public_alg=self.token_public_alg, token_auth_claim=self.token_auth_claim,
            token_audience_claim=self.token_audience_claim, token_audience=self.token_audience,
            basic_auth_conf=self.basic_auth_conf)

    @property
    def effective_worker_id(self) -> str:
        return self.worker_id or f"{self.worker_hostname}:{self.worker_port}"
