"""A standalone.conf written the way Apache ships it (its keys, defaults, comments and empty
values; our own copy of those facts) starts `pulsar standalone` and serves the official client."""

from __future__ import annotations

import pathlib

import pulsar

from pulsar_broker.testing import StandaloneProcess

#: Keys and values of Apache's conf/standalone.conf (Pulsar 3.x/4.x), a representative part:
#: empty values mean "default", unknown keys are warned about and ignored.
STOCK_STANDALONE_CONF = """\
### --- General broker settings --- ###

# The metadata store URL
metadataStoreUrl=
metadataStoreConfigPath=
configurationMetadataStoreUrl=
brokerServicePort=6650
webServicePort=8080
bindAddress=0.0.0.0
bindAddresses=
advertisedAddress=
haProxyProtocolEnabled=false
numIOThreads=
numOrderedExecutorThreads=8
numHttpServerThreads=
numExecutorThreadPoolSize=
numCacheExecutorThreadPoolSize=10
maxConcurrentHttpRequests=1024
clusterName=standalone
failureDomainsEnabled=false
metadataStoreSessionTimeoutMillis=30000
metadataStoreOperationTimeoutSeconds=30
brokerShutdownTimeoutMs=60000
skipBrokerShutdownOnOOM=false
backlogQuotaCheckEnabled=true
backlogQuotaCheckIntervalInSeconds=60
backlogQuotaDefaultLimitGB=10
backlogQuotaDefaultLimitSecond=-1
ttlDurationDefaultInSeconds=0
brokerDeleteInactiveTopicsEnabled=true
brokerDeleteInactiveTopicsFrequencySeconds=60
maxPendingPublishRequestsPerConnection=1000
messageExpiryCheckIntervalInMinutes=5
activeConsumerFailoverDelayTimeMillis=1000
subscriptionExpirationTimeMinutes=0
subscriptionRedeliveryTrackerEnabled=true

# On KeyShared subscriptions, with default AUTO_SPLIT mode, use splitting ranges or
# consistent hashing to reassign keys to new consumers
subscriptionKeySharedUseConsistentHashing=true
subscriptionKeySharedConsistentHashingReplicaPoints=100
brokerDeduplicationEnabled=false
defaultNumberOfNamespaceBundles=4
maxTopicsPerNamespace=0
isAllowAutoUpdateSchemaEnabled=true
maxUnackedMessagesPerConsumer=50000
maxUnackedMessagesPerSubscription=200000
dispatchThrottlingRatePerTopicInMsg=0
maxProducersPerTopic=0
maxConsumersPerTopic=0
maxSubscriptionsPerTopic=0
maxConsumersPerSubscription=0
maxNumPartitionsPerPartitionedTopic=0

### --- TLS --- ###
tlsEnabled=false
tlsCertRefreshCheckDurationSec=300
tlsCertificateFilePath=
tlsKeyFilePath=
tlsTrustCertsFilePath=
tlsAllowInsecureConnection=false

### --- Authentication --- ###
authenticationEnabled=false
authenticationProviders=
authorizationEnabled=false
superUserRoles=
brokerClientAuthenticationPlugin=
brokerClientAuthenticationParameters=

### --- BookKeeper client and storage --- ###
bookkeeperClientTimeoutInSeconds=30
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
managedLedgerCacheSizeMB=
managedLedgerMaxEntriesPerLedger=50000
managedLedgerMinLedgerRolloverTimeMinutes=10
managedLedgerMaxLedgerRolloverTimeMinutes=240
managedLedgerCursorMaxEntriesPerLedger=50000
dbStorage_writeCacheMaxSizeMb=
dbStorage_readAheadCacheMaxSizeMb=

### --- Load balancer --- ###
loadBalancerEnabled=false
loadBalancerPlacementStrategy=weightedRandomSelection

### --- Misc --- ###
webSocketServiceEnabled=true
exposeTopicLevelMetricsInPrometheus=true
transactionCoordinatorEnabled=false
"""


def test_stock_standalone_conf_starts_and_serves_key_shared_by_consistent_hashing(
        tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "standalone.conf"
    conf.write_text(STOCK_STANDALONE_CONF)
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"})
    node.extra_arguments = ["--config", str(conf), "-nfw"]
    node.start()
    try:
        client = pulsar.Client(node.service_url)
        topic = "persistent://public/default/stock-key-shared"
        consumers = [client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared,
                                      consumer_name=f"c{i}") for i in range(3)]
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(60):
            producer.send(f"{i}".encode(), partition_key=f"key-{i % 12}")
        owners: dict[str, set[int]] = {}
        received = 0
        for index, consumer in enumerate(consumers):
            while True:
                try:
                    message = consumer.receive(timeout_millis=2000)
                except pulsar.Timeout:
                    break
                owners.setdefault(message.partition_key(), set()).add(index)
                consumer.acknowledge(message)
                received += 1
        assert received == 60
        assert all(len(who) == 1 for who in owners.values())  # each key on one consumer
        client.close()
        # Keys this broker does not implement are named once, not fatal.
        assert node.log_text().count("setting(s) this service does not implement") == 1
        assert "webSocketServiceEnabled" in node.log_text()
    finally:
        node.stop()
