"""Broker settings, read from a broker.conf-style file with Apache Pulsar's key names.

Only keys this broker implements are declared; other keys in a file are
ignored so Apache's own broker.conf can be used as a starting point.
"""

from __future__ import annotations

import dataclasses
import ssl

from pulsar_common import config, errors, tls
from pulsar_common.config import setting

from pulsar_broker.namespace import listeners as advertised
from pulsar_broker.schema import compatibility

ONE_MB = 1024 * 1024

#: What a broker does when a topic's backlog exceeds its quota (Apache's RetentionPolicy).
BACKLOG_QUOTA_POLICIES = ("producer_request_hold", "producer_exception",
                          "consumer_backlog_eviction")


#: How inactive a topic must be to be deleted (Apache's InactiveTopicDeleteMode): without
#: subscriptions, or with every subscription caught up.
INACTIVE_TOPIC_DELETE_MODES = ("delete_when_no_subscriptions",
                               "delete_when_subscriptions_caught_up")

#: Apache's SubscriptionType names, as subscriptionTypesEnabled lists them.
SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")


@dataclasses.dataclass(frozen=True)
class ServiceUrls:
    """Where clients reach a broker at its advertised address. broker_service_url and
    web_service_url are the plain ports' URLs, or the TLS ones when the plain port is off
    (so every broker has one of each); the *_tls URLs are None without TLS ports."""

    broker_service_url: str
    web_service_url: str
    broker_service_url_tls: str | None
    web_service_url_tls: str | None


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """Settings by Apache key; checked in __post_init__ (an invalid value stops start-up)."""

    cluster_name: str = setting("clusterName", "standalone", "Name of the cluster this broker serves")
    metadata_store_url: str = setting(
        "metadataStoreUrl", "", "etcd:http://host:2379 or rocksdb:/path; empty means <data-dir>/metadata"
    )
    metadata_store_session_timeout_millis: int = setting(
        "metadataStoreSessionTimeoutMillis", 30000,
        "How long a broker may lose the metadata store before its bundles go to other brokers",
    )
    bookkeeper_tls_provider_factory_class: str = setting(
        "bookkeeperTLSProviderFactoryClass", "",
        "Set (org.apache.bookkeeper.tls.TLSContextFactory) to reach bookies over TLS")
    bookkeeper_tls_trust_certs_file_path: str = setting(
        "bookkeeperTLSTrustCertsFilePath", "", "PEM CAs bookies' certificates are checked against")
    bookkeeper_tls_certificate_file_path: str = setting(
        "bookkeeperTLSCertificateFilePath", "", "Client certificate shown to bookies")
    bookkeeper_tls_key_file_path: str = setting(
        "bookkeeperTLSKeyFilePath", "", "Key of bookkeeperTLSCertificateFilePath")
    bookkeeper_tls_client_authentication: bool = setting(
        "bookkeeperTLSClientAuthentication", False,
        "Show bookkeeperTLSCertificateFilePath to bookies (their tlsClientAuthentication)")
    metadata_store_config_path: str = setting(
        "metadataStoreConfigPath", "",
        "File with the metadata store client's settings; for etcd over TLS: useTls, "
        "tlsTrustCertsFilePath, tlsCertificateFilePath, tlsKeyFilePath, authority")
    bind_address: str = setting("bindAddress", "0.0.0.0", "Address the listeners bind to")
    advertised_address: str = setting(
        "advertisedAddress", "localhost", "Host name clients are told to connect to"
    )
    advertised_listeners: str = setting(
        "advertisedListeners", "",
        "Named addresses clients may ask for with their listenerName: "
        "<name>:pulsar://host:port[,<name>:pulsar+ssl://host:port,...]")
    internal_listener_name: str = setting(
        "internalListenerName", "",
        "Listener used between brokers and by lookups without a listener name "
        "(default: the first of advertisedListeners)")
    broker_service_port: int | None = setting(
        "brokerServicePort", 6650, "Binary protocol port (empty: no plain-text port)",
        empty_is_none=True)
    web_service_port: int | None = setting(
        "webServicePort", 8080, "HTTP admin, lookup and metrics port (empty: no plain HTTP)",
        empty_is_none=True)
    # TLS (see pulsar_common.tls and docs/security.md).
    broker_service_port_tls: int | None = setting(
        "brokerServicePortTls", None, "Binary protocol over TLS port (pulsar+ssl://), e.g. 6651")
    web_service_port_tls: int | None = setting(
        "webServicePortTls", None, "HTTPS port for admin, lookup and metrics, e.g. 8443")
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
        "How often the TLS files are checked for changes; new connections use new files "
        "(0: never)")
    max_message_size: int = setting(
        "maxMessageSize", 5 * ONE_MB, "Largest message (metadata + payload) accepted, bytes"
    )
    enable_packages_management: bool = setting(
        "enablePackagesManagement", False,
        "Serve /admin/v3/packages (function, sink and source packages kept in ledgers)")
    packages_management_storage_provider: str = setting(
        "packagesManagementStorageProvider",
        "org.apache.pulsar.packages.management.storage.bookkeeper."
        "BookKeeperPackagesStorageProvider",
        "Where package bytes go; only BookKeeper ledgers (Apache's default provider)")
    packages_replicas: int = setting(
        "packagesReplicas", 0,
        "Bookies each package is written to (ensemble = write = ack quorum); 0: the "
        "managedLedgerDefault ensemble and quorums")
    packages_max_size_bytes: int = setting(
        "packagesMaxSizeBytes", 64 * ONE_MB, "Largest package accepted (larger: 413)")
    expose_topic_level_metrics_in_prometheus: bool = setting(
        "exposeTopicLevelMetricsInPrometheus", True,
        "/metrics per topic and subscription (true) or summed per namespace (false)")
    allow_auto_topic_creation: bool = setting("allowAutoTopicCreation", True)
    allow_auto_topic_creation_type: str = setting(
        "allowAutoTopicCreationType", "non-partitioned", "non-partitioned or partitioned"
    )
    default_num_partitions: int = setting("defaultNumPartitions", 1)
    max_num_partitions_per_partitioned_topic: int = setting(
        "maxNumPartitionsPerPartitionedTopic", 10_000,
        "Most partitions a partitioned topic may have (0: no limit; Apache's default is 0, "
        "see docs/design-choices.md)")
    allow_auto_subscription_creation: bool = setting("allowAutoSubscriptionCreation", True)
    subscription_types_enabled: tuple[str, ...] = setting(
        "subscriptionTypesEnabled", SUBSCRIPTION_TYPES,
        "Subscription types consumers may use, unless a namespace's subscriptionTypesEnabled "
        "names others")
    max_topics_per_namespace: int = setting(
        "maxTopicsPerNamespace", 0,
        "Most persistent topics (a partition counts as one) a namespace may have, unless its "
        "maxTopicsPerNamespace policy says otherwise (0: no limit); system topics do not count")
    subscription_expiration_time_minutes: int = setting(
        "subscriptionExpirationTimeMinutes", 0,
        "A durable subscription with no consumer for this long is deleted, unless its "
        "namespace's subscriptionExpirationTime says otherwise (0: never)")
    subscription_expiry_check_interval_in_minutes: int = setting(
        "subscriptionExpiryCheckIntervalInMinutes", 5,
        "How often subscriptions are checked for expiration")
    subscription_expiry_check_interval_seconds: float = setting(
        "subscriptionExpiryCheckIntervalSeconds", 0.0,
        "pulsar-py only: when > 0, the subscription expiry check runs this often (seconds) "
        "instead of every subscriptionExpiryCheckIntervalInMinutes")
    broker_delete_inactive_topics_enabled: bool = setting(
        "brokerDeleteInactiveTopicsEnabled", False,
        "Delete topics without producers, consumers and (by the mode) subscriptions once "
        "inactive for the max inactive duration, unless the namespace or topic sets "
        "inactiveTopicPolicies (Apache's default is true, see docs/design-choices.md)")
    broker_delete_inactive_topics_frequency_seconds: int = setting(
        "brokerDeleteInactiveTopicsFrequencySeconds", 60, "How often inactive topics are looked for")
    broker_delete_inactive_topics_mode: str = setting(
        "brokerDeleteInactiveTopicsMode", "delete_when_no_subscriptions",
        "delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
    broker_delete_inactive_topics_max_inactive_duration_seconds: int | None = setting(
        "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds", None,
        "How long a topic stays inactive before deletion (empty: "
        "brokerDeleteInactiveTopicsFrequencySeconds)", empty_is_none=True)
    broker_deduplication_enabled: bool = setting("brokerDeduplicationEnabled", False)
    broker_service_compaction_monitor_interval_in_seconds: int = setting(
        "brokerServiceCompactionMonitorIntervalInSeconds", 60,
        "How often topics are checked against their compaction threshold")
    broker_service_compaction_threshold_in_bytes: int = setting(
        "brokerServiceCompactionThresholdInBytes", 0,
        "Compact a topic once its compaction backlog exceeds this many bytes, unless its "
        "namespace sets compaction_threshold (0: never automatically)")
    topic_compaction_retain_null_key: bool = setting(
        "topicCompactionRetainNullKey", False,
        "Keep messages without a key in the compacted view (Apache drops them by default)")
    keep_alive_interval_seconds: int = setting(
        "keepAliveIntervalSeconds", 30,
        "Ping interval; a connection silent for one interval, or without CONNECT, is closed")
    broker_max_connections: int = setting(
        "brokerMaxConnections", 0, "Binary-protocol connections held at once (0: no limit)")
    broker_max_connections_per_ip: int = setting(
        "brokerMaxConnectionsPerIp", 0,
        "Binary-protocol connections from one client address (0: no limit)")
    max_http_server_connections: int = setting(
        "maxHttpServerConnections", 2048, "HTTP connections held at once (0: no limit)")
    max_concurrent_http_requests: int = setting(
        "maxConcurrentHttpRequests", 1024,
        "HTTP requests handled at once; more wait for a slot (0: no limit)")
    http_max_request_header_size: int = setting(
        "httpMaxRequestHeaderSize", 8 * 1024,
        "Longest HTTP request line or header line, bytes (longer: 400)")
    http_server_idle_timeout_millis: int = setting(
        "httpServerIdleTimeoutMillis", 30_000,
        "pulsar-py only: an HTTP connection with no complete request for this long is "
        "closed (idle keep-alive, or headers sent too slowly); Jetty's default in Apache")
    max_pending_publish_requests_per_connection: int = setting(
        "maxPendingPublishRequestsPerConnection", 1000,
        "SENDs in flight on one connection before the broker stops reading from it",
    )
    dispatcher_max_read_batch_size: int = setting("dispatcherMaxReadBatchSize", 100)
    dispatcher_max_read_size_bytes: int = setting("dispatcherMaxReadSizeBytes", 5 * ONE_MB)
    max_unacked_messages_per_consumer: int = setting("maxUnackedMessagesPerConsumer", 50000)
    max_unacked_messages_per_subscription: int = setting(
        "maxUnackedMessagesPerSubscription", 200000,
        "Messages the consumers of a Shared or Key_Shared subscription may hold unacknowledged "
        "together before dispatch stops, until acknowledgements bring them below half "
        "(0: no limit)")
    max_producers_per_topic: int = setting(
        "maxProducersPerTopic", 0, "Producers a topic admits at most (0: no limit)")
    max_consumers_per_topic: int = setting(
        "maxConsumersPerTopic", 0, "Consumers a topic admits at most (0: no limit)")
    max_consumers_per_subscription: int = setting(
        "maxConsumersPerSubscription", 0, "Consumers a subscription admits at most (0: no limit)")
    max_subscriptions_per_topic: int = setting(
        "maxSubscriptionsPerTopic", 0, "Subscriptions a topic may have (0: no limit)")
    max_publish_rate_per_topic_in_messages: int = setting(
        "maxPublishRatePerTopicInMessages", 0,
        "Messages per second a topic accepts when its namespace sets no publishRate (0: no limit)")
    max_publish_rate_per_topic_in_bytes: int = setting(
        "maxPublishRatePerTopicInBytes", 0,
        "Bytes per second a topic accepts when its namespace sets no publishRate (0: no limit)")
    dispatch_throttling_rate_per_topic_in_msg: int = setting(
        "dispatchThrottlingRatePerTopicInMsg", 0,
        "Messages per second a topic delivers when its namespace sets no dispatchRate "
        "(0: no limit)")
    dispatch_throttling_rate_per_topic_in_byte: int = setting(
        "dispatchThrottlingRatePerTopicInByte", 0,
        "Bytes per second a topic delivers when its namespace sets no dispatchRate (0: no limit)")
    dispatch_throttling_rate_in_msg: int = setting(
        "dispatchThrottlingRateInMsg", 0,
        "Messages per second the broker delivers over all its topics together (0: no limit)")
    dispatch_throttling_rate_in_byte: int = setting(
        "dispatchThrottlingRateInByte", 0,
        "Bytes per second the broker delivers over all its topics together (0: no limit)")
    dispatch_throttling_rate_per_subscription_in_msg: int = setting(
        "dispatchThrottlingRatePerSubscriptionInMsg", 0,
        "Messages per second a subscription gets when its namespace sets no "
        "subscriptionDispatchRate (0: no limit)")
    dispatch_throttling_rate_per_subscription_in_byte: int = setting(
        "dispatchThrottlingRatePerSubscriptionInByte", 0,
        "Bytes per second a subscription gets when its namespace sets no "
        "subscriptionDispatchRate (0: no limit)")
    subscribe_throttling_rate_per_consumer: int = setting(
        "subscribeThrottlingRatePerConsumer", 0,
        "Subscribes one consumer (host, name, id) may make per period when its namespace sets "
        "no subscribeRate (0: no limit)")
    subscribe_rate_period_per_consumer_in_second: int = setting(
        "subscribeRatePeriodPerConsumerInSecond", 30,
        "The period of subscribeThrottlingRatePerConsumer, seconds")
    subscription_redelivery_tracker_enabled: bool = setting(
        "subscriptionRedeliveryTrackerEnabled", True
    )
    subscription_key_shared_use_consistent_hashing: bool = setting(
        "subscriptionKeySharedUseConsistentHashing", False,
        "Key_Shared (AUTO_SPLIT) assigns keys by a consistent-hashing ring instead of splitting "
        "hash ranges"
    )
    subscription_key_shared_consistent_hashing_replica_points: int = setting(
        "subscriptionKeySharedConsistentHashingReplicaPoints", 100,
        "Points per consumer on the consistent-hashing ring"
    )
    # Namespace policies applied to topics (see pulsar_broker.topics.policies).
    managed_ledger_max_ensemble_size: int = setting(
        "managedLedgerMaxEnsembleSize", 5, "Largest bookkeeperEnsemble a namespace may set")
    managed_ledger_max_write_quorum: int = setting(
        "managedLedgerMaxWriteQuorum", 5, "Largest bookkeeperWriteQuorum a namespace may set")
    managed_ledger_max_ack_quorum: int = setting(
        "managedLedgerMaxAckQuorum", 5, "Largest bookkeeperAckQuorum a namespace may set")
    ttl_duration_default_in_seconds: int = setting(
        "ttlDurationDefaultInSeconds", 0,
        "Message TTL of namespaces that set none (0: messages never expire)")
    message_expiry_check_interval_in_minutes: int = setting(
        "messageExpiryCheckIntervalInMinutes", 5, "How often expired messages are acknowledged")
    message_expiry_check_interval_seconds: float = setting(
        "messageExpiryCheckIntervalSeconds", 0.0,
        "pulsar-py only: when > 0, the message expiry check runs this often (seconds) "
        "instead of every messageExpiryCheckIntervalInMinutes")
    backlog_quota_check_enabled: bool = setting("backlogQuotaCheckEnabled", True)
    backlog_quota_check_interval_in_seconds: int = setting(
        "backlogQuotaCheckIntervalInSeconds", 60, "How often topics' backlogs are checked")
    backlog_quota_default_limit_bytes: int = setting(
        "backlogQuotaDefaultLimitBytes", -1,
        "Backlog size quota of namespaces that set none (-1: no quota)")
    backlog_quota_default_limit_gb: float = setting(
        "backlogQuotaDefaultLimitGB", -1.0, "Like backlogQuotaDefaultLimitBytes, in GB; wins when > 0")
    backlog_quota_default_limit_second: int = setting(
        "backlogQuotaDefaultLimitSecond", -1,
        "Backlog age quota (message_age) of namespaces that set none (-1: no quota)")
    backlog_quota_default_retention_policy: str = setting(
        "backlogQuotaDefaultRetentionPolicy", "producer_request_hold",
        "producer_request_hold, producer_exception or consumer_backlog_eviction")

    # Delayed delivery (see pulsar_broker.subscriptions.delayed_delivery).
    delayed_delivery_enabled: bool = setting(
        "delayedDeliveryEnabled", True,
        "Shared and Key_Shared subscriptions hold messages until their deliver-at time")
    delayed_delivery_tick_time_millis: int = setting(
        "delayedDeliveryTickTimeMillis", 1000,
        "Granularity of the delayed-delivery timer; a message due within one tick goes out")
    is_delayed_delivery_deliver_at_time_strict: bool = setting(
        "isDelayedDeliveryDeliverAtTimeStrict", False,
        "Deliver delayed messages only once their time is reached, not up to one tick early")

    # Schema registry (see pulsar_broker.schema).
    schema_compatibility_strategy: str = setting(
        "schemaCompatibilityStrategy", "FULL",
        "Compatibility strategy of namespaces that set none (BACKWARD, FORWARD, FULL, "
        "*_TRANSITIVE, ALWAYS_COMPATIBLE, ALWAYS_INCOMPATIBLE)")
    is_allow_auto_update_schema_enabled: bool = setting(
        "isAllowAutoUpdateSchemaEnabled", True,
        "Producers may register new schema versions (namespace is_allow_auto_update_schema wins)")
    is_schema_validation_enforced: bool = setting(
        "isSchemaValidationEnforced", False,
        "Refuse producers without schema on topics that have one")

    # Load balancing (see pulsar_broker.loadbalance and docs/load-balancing.md).
    load_balancer_enabled: bool = setting(
        "loadBalancerEnabled", True,
        "The leader broker sheds and splits bundles (off when an operator balances the cluster)")
    load_balancer_shedding_enabled: bool = setting("loadBalancerSheddingEnabled", True)
    load_balancer_shedding_interval_minutes: int = setting(
        "loadBalancerSheddingIntervalMinutes", 1, "How often the leader plans unloads and splits")
    load_balancer_shedding_interval_seconds: float = setting(
        "loadBalancerSheddingIntervalSeconds", 0.0,
        "pulsar-py only: when > 0, the planning interval in seconds instead of "
        "loadBalancerSheddingIntervalMinutes")
    load_balancer_shedding_grace_period_minutes: float = setting(
        "loadBalancerSheddingGracePeriodMinutes", 30,
        "A bundle moved by the balancer is not moved again within this time")
    load_balancer_report_update_threshold_percentage: int = setting(
        "loadBalancerReportUpdateThresholdPercentage", 10,
        "A load report is written when a figure changed by more than this percentage")
    load_balancer_report_update_min_interval_millis: int = setting(
        "loadBalancerReportUpdateMinIntervalMillis", 5000,
        "How often the broker samples its load (and at most how often it writes its report)")
    load_balancer_report_update_max_interval_minutes: int = setting(
        "loadBalancerReportUpdateMaxIntervalMinutes", 15,
        "A load report is written at least this often, changed or not")
    load_balancer_broker_threshold_shedder_percentage: int = setting(
        "loadBalancerBrokerThresholdShedderPercentage", 10,
        "A broker whose usage exceeds the cluster average by more than this sheds bundles")
    load_balancer_history_resource_percentage: float = setting(
        "loadBalancerHistoryResourcePercentage", 0.9,
        "Weight of the previous usage in the smoothed usage (0: only the latest report)")
    load_balancer_cpu_resource_weight: float = setting("loadBalancerCPUResourceWeight", 1.0)
    load_balancer_memory_resource_weight: float = setting("loadBalancerMemoryResourceWeight", 1.0)
    load_balancer_direct_memory_resource_weight: float = setting(
        "loadBalancerDirectMemoryResourceWeight", 1.0)
    load_balancer_bandwith_in_resource_weight: float = setting(
        "loadBalancerBandwithInResourceWeight", 1.0)
    load_balancer_bandwith_out_resource_weight: float = setting(
        "loadBalancerBandwithOutResourceWeight", 1.0)
    load_balancer_bundle_unload_min_throughput_threshold: float = setting(
        "loadBalancerBundleUnloadMinThroughputThreshold", 10.0,
        "A broker sheds only when it would move at least this many MB/s")
    load_balancer_max_bundles_to_unload_per_cycle: int = setting(
        "loadBalancerMaxBundlesToUnloadPerCycle", 8,
        "pulsar-py only: most bundles the balancer unloads in one round")
    load_balancer_override_broker_nic_speed_gbps: float = setting(
        "loadBalancerOverrideBrokerNicSpeedGbps", 0.0,
        "Bandwidth limit of the load report, Gbit/s (0: 10 Gbit/s)")
    load_balancer_auto_bundle_split_enabled: bool = setting(
        "loadBalancerAutoBundleSplitEnabled", True)
    load_balancer_auto_unload_split_bundles_enabled: bool = setting(
        "loadBalancerAutoUnloadSplitBundlesEnabled", True)
    load_balancer_namespace_bundle_max_topics: int = setting(
        "loadBalancerNamespaceBundleMaxTopics", 1000)
    load_balancer_namespace_bundle_max_sessions: int = setting(
        "loadBalancerNamespaceBundleMaxSessions", 1000, "Producers + consumers of a bundle")
    load_balancer_namespace_bundle_max_msg_rate: int = setting(
        "loadBalancerNamespaceBundleMaxMsgRate", 30000, "Messages in + out per second")
    load_balancer_namespace_bundle_max_bandwidth_mbytes: int = setting(
        "loadBalancerNamespaceBundleMaxBandwidthMbytes", 100, "MB in + out per second")
    load_balancer_namespace_maximum_bundles: int = setting(
        "loadBalancerNamespaceMaximumBundles", 128, "Splits stop at this many bundles")
    load_balancer_max_number_of_bundles_to_split_per_cycle: int = setting(
        "loadBalancerMaxNumberOfBundlesToSplitPerCycle", 10)
    default_namespace_bundle_split_algorithm: str = setting(
        "defaultNamespaceBundleSplitAlgorithm", "range_equally_divide",
        "range_equally_divide or topic_count_equally_divide")

    # Authentication and authorization (see pulsar_broker.security and docs/security.md).
    authentication_enabled: bool = setting(
        "authenticationEnabled", False,
        "Clients must authenticate (binary CONNECT and HTTP) with one of authenticationProviders")
    authentication_providers: tuple[str, ...] = setting(
        "authenticationProviders", (),
        "Provider class names (org.apache.pulsar.broker.authentication."
        "AuthenticationProviderToken, ...Basic, ...Tls) or method names token, basic, tls")
    authentication_refresh_check_seconds: int = setting(
        "authenticationRefreshCheckSeconds", 60,
        "How often live connections' credentials are checked for expiry; an expired one is "
        "challenged (AUTH_CHALLENGE) and closed unless refreshed by the next check")
    anonymous_user_role: str = setting(
        "anonymousUserRole", "", "Role of clients without credentials (empty: refuse them)")
    authorization_enabled: bool = setting(
        "authorizationEnabled", False,
        "Check roles against superUserRoles, tenant adminRoles and namespace/topic permissions")
    authorization_provider: str = setting(
        "authorizationProvider",
        "org.apache.pulsar.broker.authorization.PulsarAuthorizationProvider",
        "Only Apache's default provider is supported")
    super_user_roles: tuple[str, ...] = setting(
        "superUserRoles", (), "Roles allowed everything (comma separated)")
    authorization_allow_wildcards_matching: bool = setting(
        "authorizationAllowWildcardsMatching", False,
        "Granted roles ending or starting with * match roles by prefix or suffix")
    proxy_roles: tuple[str, ...] = setting(
        "proxyRoles", (),
        "Roles of proxies: their connections are authorized as the client they forward "
        "(CONNECT original_principal)")
    token_secret_key: str = setting(
        "tokenSecretKey", "", "HMAC key of the token method: file:///path, data:;base64,... ")
    token_public_key: str = setting(
        "tokenPublicKey", "", "RSA or EC public key of the token method: file:///path, data:...")
    token_public_alg: str = setting(
        "tokenPublicAlg", "RS256", "Algorithm of tokenPublicKey (RS256, ES256, ...)")
    token_auth_claim: str = setting(
        "tokenAuthClaim", "", "Claim holding the role (empty: sub)")
    token_audience_claim: str = setting(
        "tokenAudienceClaim", "", "Claim holding the audiences (empty: not checked)")
    token_audience: str = setting(
        "tokenAudience", "", "Audience tokenAudienceClaim must contain")
    token_allowed_clock_skew_seconds: int = setting(
        "tokenAllowedClockSkewSeconds", 0, "Leeway on exp and nbf")
    basic_auth_conf: str = setting(
        "basicAuthConf", "",
        "htpasswd-style users of the basic method: a path, file:///path, data:... or base64")
    broker_client_authentication_plugin: str = setting(
        "brokerClientAuthenticationPlugin", "",
        "How this broker authenticates to other brokers (forwarded admin requests, lookups): "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken or ...AuthenticationBasic")
    broker_client_authentication_parameters: str = setting(
        "brokerClientAuthenticationParameters", "",
        "Parameters of brokerClientAuthenticationPlugin, e.g. token:<jwt> or file:///path")

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def tls(self) -> tls.TlsSettings:
        """The TLS ports' settings."""
        return tls.TlsSettings(
            cert_file=self.tls_certificate_file_path, key_file=self.tls_key_file_path,
            trust_certs_file=self.tls_trust_certs_file_path,
            allow_insecure_connection=self.tls_allow_insecure_connection,
            require_trusted_client_cert=self.tls_require_trusted_client_cert_on_connect,
            protocols=self.tls_protocols, ciphers=self.tls_ciphers)

    @property
    def key_shared_replica_points(self) -> int:
        """Ring points per Key_Shared consumer; 0 when keys go by split hash ranges."""
        if not self.subscription_key_shared_use_consistent_hashing:
            return 0
        return self.subscription_key_shared_consistent_hashing_replica_points

    def service_urls(self) -> ServiceUrls:
        host = self.advertised_address
        broker_tls = (None if self.broker_service_port_tls is None
                      else f"pulsar+ssl://{host}:{self.broker_service_port_tls}")
        web_tls = (None if self.web_service_port_tls is None
                   else f"https://{host}:{self.web_service_port_tls}")
        broker = (f"pulsar://{host}:{self.broker_service_port}"
                  if self.broker_service_port is not None else broker_tls)
        web = (f"http://{host}:{self.web_service_port}"
               if self.web_service_port is not None else web_tls)
        assert broker is not None and web is not None  # _validate_ports
        return ServiceUrls(broker, web, broker_tls, web_tls)

    def bookie_tls_context(self) -> ssl.SSLContext | None:
        """TLS towards bookies (bookkeeperTLS* settings); None for plain TCP."""
        if not self.bookkeeper_tls_provider_factory_class:
            return None
        use_cert = self.bookkeeper_tls_client_authentication
        return tls.client_context(tls.TlsSettings(
            trust_certs_file=self.bookkeeper_tls_trust_certs_file_path,
            cert_file=self.bookkeeper_tls_certificate_file_path if use_cert else "",
            key_file=self.bookkeeper_tls_key_file_path if use_cert else ""))

    @property
    def tls_enabled(self) -> bool:
        return self.broker_service_port_tls is not None or self.web_service_port_tls is not None

    @property
    def listeners(self) -> tuple[advertised.AdvertisedListener, ...]:
        return advertised.parse(self.advertised_listeners)

    @property
    def internal_listener(self) -> advertised.AdvertisedListener | None:
        return advertised.internal(self.listeners, self.internal_listener_name)


def _validate(conf: BrokerConfig) -> None:
    """Refuse values we would otherwise ignore: a setting that does nothing is worse than
    a clear error."""
    if conf.subscription_key_shared_consistent_hashing_replica_points < 1:
        raise errors.ConfigError("subscriptionKeySharedConsistentHashingReplicaPoints must be "
                                 "at least 1")
    if conf.allow_auto_topic_creation_type not in ("non-partitioned", "partitioned"):
        raise errors.ConfigError("allowAutoTopicCreationType must be non-partitioned or partitioned")
    if conf.metadata_store_session_timeout_millis < 1000:
        raise errors.ConfigError("metadataStoreSessionTimeoutMillis must be at least 1000")
    for key, value in (("brokerMaxConnections", conf.broker_max_connections),
                       ("brokerMaxConnectionsPerIp", conf.broker_max_connections_per_ip),
                       ("maxHttpServerConnections", conf.max_http_server_connections),
                       ("maxConcurrentHttpRequests", conf.max_concurrent_http_requests)):
        if value < 0:
            raise errors.ConfigError(f"{key} must be 0 (no limit) or more")
    for key, value in (("dispatcherMaxReadBatchSize", conf.dispatcher_max_read_batch_size),
                       ("dispatcherMaxReadSizeBytes", conf.dispatcher_max_read_size_bytes),
                       ("subscribeRatePeriodPerConsumerInSecond",
                        conf.subscribe_rate_period_per_consumer_in_second)):
        if value < 1:
            raise errors.ConfigError(f"{key} must be at least 1")
    if conf.http_max_request_header_size < 1024:
        raise errors.ConfigError("httpMaxRequestHeaderSize must be at least 1024")
    if conf.http_server_idle_timeout_millis <= 0:
        raise errors.ConfigError("httpServerIdleTimeoutMillis must be positive")
    if conf.max_num_partitions_per_partitioned_topic < 0:
        raise errors.ConfigError("maxNumPartitionsPerPartitionedTopic must be 0 (no limit) or more")
    if (conf.max_num_partitions_per_partitioned_topic
            and conf.default_num_partitions > conf.max_num_partitions_per_partitioned_topic):
        raise errors.ConfigError(
            "defaultNumPartitions must not exceed maxNumPartitionsPerPartitionedTopic")
    if conf.max_message_size <= 0:
        raise errors.ConfigError("maxMessageSize must be positive")
    if not conf.packages_management_storage_provider.endswith(
            "BookKeeperPackagesStorageProvider"):
        raise errors.ConfigError("packagesManagementStorageProvider: only "
                                 "BookKeeperPackagesStorageProvider is available")
    if conf.packages_replicas < 0 or conf.packages_max_size_bytes <= 0:
        raise errors.ConfigError(
            "packagesReplicas must be 0 or more and packagesMaxSizeBytes positive")
    if conf.backlog_quota_default_retention_policy not in BACKLOG_QUOTA_POLICIES:
        raise errors.ConfigError(
            f"backlogQuotaDefaultRetentionPolicy must be one of {', '.join(BACKLOG_QUOTA_POLICIES)}")
    if conf.backlog_quota_check_interval_in_seconds <= 0:
        raise errors.ConfigError("backlogQuotaCheckIntervalInSeconds must be positive")
    if conf.schema_compatibility_strategy.upper() not in compatibility.STRATEGIES:
        raise errors.ConfigError("schemaCompatibilityStrategy must be one of "
                                 f"{', '.join(compatibility.STRATEGIES)}")
    if conf.delayed_delivery_tick_time_millis <= 0:
        raise errors.ConfigError("delayedDeliveryTickTimeMillis must be positive")
    if conf.broker_delete_inactive_topics_mode not in INACTIVE_TOPIC_DELETE_MODES:
        raise errors.ConfigError("brokerDeleteInactiveTopicsMode must be one of "
                                 f"{', '.join(INACTIVE_TOPIC_DELETE_MODES)}")
    if conf.broker_delete_inactive_topics_frequency_seconds <= 0:
        raise errors.ConfigError("brokerDeleteInactiveTopicsFrequencySeconds must be positive")
    if (conf.broker_delete_inactive_topics_max_inactive_duration_seconds is not None
            and conf.broker_delete_inactive_topics_max_inactive_duration_seconds <= 0):
        raise errors.ConfigError(
            "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds must be positive")
    if conf.message_expiry_check_interval_in_minutes <= 0:
        raise errors.ConfigError("messageExpiryCheckIntervalInMinutes must be positive")
    unknown_types = set(conf.subscription_types_enabled) - set(SUBSCRIPTION_TYPES)
    if unknown_types:
        raise errors.ConfigError(
            f"subscriptionTypesEnabled may name only {', '.join(SUBSCRIPTION_TYPES)}, "
            f"not {', '.join(sorted(unknown_types))}")
    if conf.max_topics_per_namespace < 0 or conf.subscription_expiration_time_minutes < 0:
        raise errors.ConfigError("maxTopicsPerNamespace and subscriptionExpirationTimeMinutes "
                                 "must be 0 (no limit) or more")
    if (conf.subscription_expiry_check_interval_in_minutes <= 0
            or conf.subscription_expiry_check_interval_seconds < 0):
        raise errors.ConfigError("subscriptionExpiryCheckIntervalInMinutes must be positive "
                                 "(subscriptionExpiryCheckIntervalSeconds 0 or more)")
    advertised.internal(advertised.parse(conf.advertised_listeners), conf.internal_listener_name)
    _validate_load_balancer(conf)
    _validate_ports(conf)


def _validate_ports(conf: BrokerConfig) -> None:
    if conf.broker_service_port is None and conf.broker_service_port_tls is None:
        raise errors.ConfigError("brokerServicePort and brokerServicePortTls are both unset: "
                                 "the broker would have no binary-protocol port")
    if conf.web_service_port is None and conf.web_service_port_tls is None:
        raise errors.ConfigError("webServicePort and webServicePortTls are both unset: "
                                 "the broker would have no HTTP port")
    if conf.tls_enabled:
        if not conf.tls_certificate_file_path or not conf.tls_key_file_path:
            raise errors.ConfigError("a TLS port is set: tlsCertificateFilePath and "
                                     "tlsKeyFilePath are required")
        if conf.tls_require_trusted_client_cert_on_connect and not conf.tls_trust_certs_file_path:
            raise errors.ConfigError("tlsRequireTrustedClientCertOnConnect needs "
                                     "tlsTrustCertsFilePath")
    tls.check_protocols(conf.tls_protocols)
    if conf.tls_cert_refresh_check_duration_sec < 0:
        raise errors.ConfigError("tlsCertRefreshCheckDurationSec must be 0 (never) or more")


def _validate_load_balancer(conf: BrokerConfig) -> None:
    if conf.default_namespace_bundle_split_algorithm not in ("range_equally_divide",
                                                             "topic_count_equally_divide"):
        raise errors.ConfigError("defaultNamespaceBundleSplitAlgorithm must be "
                                 "range_equally_divide or topic_count_equally_divide")
    if conf.load_balancer_report_update_min_interval_millis <= 0:
        raise errors.ConfigError("loadBalancerReportUpdateMinIntervalMillis must be positive")
    if conf.load_balancer_shedding_interval_minutes <= 0:
        raise errors.ConfigError("loadBalancerSheddingIntervalMinutes must be positive")
    if not 0.0 <= conf.load_balancer_history_resource_percentage < 1.0:
        raise errors.ConfigError("loadBalancerHistoryResourcePercentage must be in [0, 1)")
    if conf.load_balancer_namespace_maximum_bundles < 1:
        raise errors.ConfigError("loadBalancerNamespaceMaximumBundles must be at least 1")


def load(path: str | None, overrides: dict[str, str] | None = None) -> BrokerConfig:
    return config.load(BrokerConfig, path, overrides)
