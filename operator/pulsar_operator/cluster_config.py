"""The services' config files (Apache key=value) rendered from a PulsarCluster.

The operator sets what wiring needs (metadata URLs, ports, directories,
cluster name, ensemble defaults); `spec.<component>.config` overrides win.
Per-pod values (advertisedAddress) are passed as `--conf` on the command line
because one ConfigMap serves every pod of a StatefulSet.
"""

from __future__ import annotations

from pulsar_operator import cluster_spec, naming

BOOKIE_PORT = 3181
BOOKIE_HTTP_PORT = 8000
BROKER_PORT = 6650
WEB_PORT = 8080
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
CONF_DIR = "/pulsar/conf"
DATA_DIR = "/pulsar/data"


def svc_host(spec: cluster_spec.ClusterSpec, component: str) -> str:
    return f"{naming.child_name(spec.name, component)}.{spec.namespace}.svc"


def metadata_store_url(spec: cluster_spec.ClusterSpec) -> str:
    if spec.etcd.managed:
        return f"etcd:http://{svc_host(spec, naming.ETCD)}:{ETCD_CLIENT_PORT}"
    return "etcd:" + ",".join(spec.etcd.external_endpoints)


def web_service_url(spec: cluster_spec.ClusterSpec) -> str:
    return f"http://{svc_host(spec, naming.BROKER)}:{WEB_PORT}"


def broker_service_url(spec: cluster_spec.ClusterSpec) -> str:
    """The URL clients use: the proxy's when a proxy runs, else the brokers'."""
    if spec.proxy.component.enabled and spec.proxy.component.replicas > 0:
        return f"pulsar://{svc_host(spec, naming.PROXY)}:{BROKER_PORT}"
    return f"pulsar://{svc_host(spec, naming.BROKER)}:{BROKER_PORT}"


def render(settings: dict[str, str]) -> str:
    lines = ["# Written by the pulsar-py operator; edit the PulsarCluster instead."]
    lines += [f"{key}={value}" for key, value in settings.items()]
    return "\n".join(lines) + "\n"


def _with_overrides(base: dict[str, str], overrides: dict[str, str]) -> dict[str, str]:
    result = dict(base)
    result.update(overrides)
    return result


def broker_conf(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    e, wq, aq = cluster_spec.ensemble_settings(spec)
    store = metadata_store_url(spec)
    base = {
        "clusterName": spec.cluster_name,
        "metadataStoreUrl": store,
        "configurationMetadataStoreUrl": store,
        "brokerServicePort": str(BROKER_PORT),
        "webServicePort": str(WEB_PORT),
        cluster_spec.ENSEMBLE: str(e),
        cluster_spec.WRITE_QUORUM: str(wq),
        cluster_spec.ACK_QUORUM: str(aq),
    }
    return _with_overrides(base, spec.broker.config)


def bookkeeper_conf(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    base = {
        "metadataServiceUri": metadata_store_url(spec),
        "bookiePort": str(BOOKIE_PORT),
        "httpServerEnabled": "true",
        "httpServerPort": str(BOOKIE_HTTP_PORT),
        "journalDirectories": f"{DATA_DIR}/journal",
        "ledgerDirectories": f"{DATA_DIR}/ledgers",
        **autorecovery_conf(spec),
    }
    return _with_overrides(base, spec.bookkeeper.component.config)


def autorecovery_conf(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    """spec.autoRecovery as bookie settings: every bookie runs an auditor candidate and a
    replication worker (autoRecoveryDaemonEnabled) when it is enabled."""
    recovery = spec.auto_recovery
    enabled = bool(recovery.get("enabled", True))
    result = {"autoRecoveryDaemonEnabled": str(enabled).lower()}
    if enabled:
        result["lostBookieRecoveryDelay"] = str(int(recovery.get("lostBookieRecoveryDelaySeconds", 60)))
        result["auditorPeriodicCheckInterval"] = str(int(recovery.get("auditPeriodSeconds", 600)))
    return result


def proxy_conf(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    store = metadata_store_url(spec)
    base = {
        "clusterName": spec.cluster_name,
        "metadataStoreUrl": store,
        "configurationMetadataStoreUrl": store,
        "brokerServiceURL": f"pulsar://{svc_host(spec, naming.BROKER)}:{BROKER_PORT}",
        "brokerWebServiceURL": web_service_url(spec),
        "servicePort": str(BROKER_PORT),
        "webServicePort": str(WEB_PORT),
    }
    return _with_overrides(base, spec.proxy.component.config)


def etcd_initial_cluster(spec: cluster_spec.ClusterSpec) -> str:
    name = naming.child_name(spec.name, naming.ETCD)
    members = [
        f"{name}-{i}=http://{name}-{i}.{name}-headless.{spec.namespace}.svc:{ETCD_PEER_PORT}"
        for i in range(spec.etcd.replicas)
    ]
    return ",".join(members)
