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
# Security (spec.tls, spec.auth): TLS ports next to the plain ones, which stay on inside the
# cluster for probes and broker-to-broker calls; secrets mounted read-only.
BROKER_TLS_PORT = 6651
WEB_TLS_PORT = 8443
TLS_DIR = "/pulsar/tls"
TOKEN_KEY_DIR = "/pulsar/auth/token-key"
PROXY_TOKEN_DIR = "/pulsar/auth/proxy-token"
OPERATOR_TOKEN_DIR = "/pulsar/auth/operator-token"
FUNCTIONS_WORKER_PORT = 6750
#: The worker's instance configs, code and logs (an emptyDir: function records and code live in
#: the metadata store, so a new pod rebuilds it).
FUNCTIONS_DIR = f"{DATA_DIR}/functions"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


def svc_host(spec: cluster_spec.ClusterSpec, component: str) -> str:
    return f"{naming.child_name(spec.name, component)}.{spec.namespace}.svc"


def metadata_store_url(spec: cluster_spec.ClusterSpec) -> str:
    if spec.etcd.managed:
        return f"etcd:http://{svc_host(spec, naming.ETCD)}:{ETCD_CLIENT_PORT}"
    return "etcd:" + ",".join(spec.etcd.external_endpoints)


def web_service_url(spec: cluster_spec.ClusterSpec) -> str:
    return f"http://{svc_host(spec, naming.BROKER)}:{WEB_PORT}"


def admin_url(spec: cluster_spec.ClusterSpec) -> str:
    """Where the operator's own admin calls go: the brokers' HTTPS port when spec.tls is on."""
    if spec.tls.enabled:
        return f"https://{svc_host(spec, naming.BROKER)}:{WEB_TLS_PORT}"
    return web_service_url(spec)


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
        **_tls_listeners(spec, "brokerServicePortTls"),
        **_authentication(spec),
    }
    if spec.auth.enabled:
        roles = (*spec.auth.superuser_roles, spec.auth.proxy_role)
        base.update({"authorizationEnabled": "true", "superUserRoles": ",".join(roles),
                     "proxyRoles": spec.auth.proxy_role})
    return _with_overrides(base, spec.broker.config)


def _tls_listeners(spec: cluster_spec.ClusterSpec, binary_port_key: str) -> dict[str, str]:
    """TLS ports and the mounted certificate files, when spec.tls is on."""
    tls = spec.tls
    if not tls.enabled:
        return {}
    return {binary_port_key: str(BROKER_TLS_PORT), "webServicePortTls": str(WEB_TLS_PORT),
            "tlsCertificateFilePath": f"{TLS_DIR}/{tls.cert_key}",
            "tlsKeyFilePath": f"{TLS_DIR}/{tls.key_key}",
            "tlsTrustCertsFilePath": f"{TLS_DIR}/{tls.ca_key}"}


def _authentication(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    auth = spec.auth
    if not auth.enabled or auth.token_secret_key is None:
        return {}
    return {"authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
            "tokenSecretKey": f"file://{TOKEN_KEY_DIR}/{auth.token_secret_key.key}"}


def secret_volumes(spec: cluster_spec.ClusterSpec,
                   component: str) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(volumes, mounts) of the secrets a broker, proxy or functions worker pod reads (spec.tls,
    spec.auth)."""
    wanted: list[tuple[str, str, str]] = []
    if spec.tls.enabled:
        wanted.append(("tls", spec.tls.secret_name, TLS_DIR))
    auth = spec.auth
    if auth.enabled and auth.token_secret_key is not None:
        wanted.append(("token-key", auth.token_secret_key.name, TOKEN_KEY_DIR))
    if auth.enabled and component == naming.PROXY and auth.proxy_token is not None:
        wanted.append(("proxy-token", auth.proxy_token.name, PROXY_TOKEN_DIR))
    if auth.enabled and component == naming.FUNCTIONS_WORKER and auth.operator_token is not None:
        wanted.append(("operator-token", auth.operator_token.name, OPERATOR_TOKEN_DIR))
    volumes: list[dict[str, object]] = [
        {"name": name, "secret": {"secretName": secret, "defaultMode": 0o400}}
        for name, secret, _ in wanted]
    mounts: list[dict[str, object]] = [
        {"name": name, "mountPath": path, "readOnly": True} for name, _, path in wanted]
    return volumes, mounts


def tls_ports(spec: cluster_spec.ClusterSpec) -> dict[str, int]:
    """Container/Service ports of the TLS listeners, when spec.tls is on."""
    return ({"pulsar-tls": BROKER_TLS_PORT, "https": WEB_TLS_PORT} if spec.tls.enabled
            else {})


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
        **_tls_listeners(spec, "servicePortTls"),
        **_authentication(spec),
    }
    if spec.tls.enabled:
        broker = svc_host(spec, naming.BROKER)
        base.update({"tlsEnabledWithBroker": "true",
                     "brokerServiceURLTLS": f"pulsar+ssl://{broker}:{BROKER_TLS_PORT}",
                     "brokerWebServiceURLTLS": f"https://{broker}:{WEB_TLS_PORT}",
                     "brokerClientTrustCertsFilePath": f"{TLS_DIR}/{spec.tls.ca_key}"})
    if spec.auth.enabled and spec.auth.proxy_token is not None:
        base.update({"brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
                     "brokerClientAuthenticationParameters":
                         f"file://{PROXY_TOKEN_DIR}/{spec.auth.proxy_token.key}",
                     "forwardAuthorizationCredentials": "true"})
    return _with_overrides(base, spec.proxy.component.config)


def functions_worker_conf(spec: cluster_spec.ClusterSpec) -> dict[str, str]:
    """functions_worker.conf: the cluster's metadata store (where brokers find the workers to
    forward /admin/v3/functions to), its brokers, and on a secured cluster the same token
    authentication and authorization as the brokers, with the operator's superuser token as the
    worker's and its instances' credentials towards brokers."""
    broker = svc_host(spec, naming.BROKER)
    base = {
        "configurationMetadataStoreUrl": metadata_store_url(spec),
        "workerPort": str(FUNCTIONS_WORKER_PORT),
        "pulsarFunctionsCluster": spec.cluster_name,
        "pulsarServiceUrl": f"pulsar://{broker}:{BROKER_PORT}",
        "pulsarWebServiceUrl": web_service_url(spec),
        "downloadDirectory": FUNCTIONS_DIR,
        **_authentication(spec),
    }
    if spec.tls.enabled:
        base.update({"pulsarServiceUrl": f"pulsar+ssl://{broker}:{BROKER_TLS_PORT}",
                     "pulsarWebServiceUrl": f"https://{broker}:{WEB_TLS_PORT}",
                     "tlsTrustCertsFilePath": f"{TLS_DIR}/{spec.tls.ca_key}"})
    auth = spec.auth
    if auth.enabled:
        roles = (*auth.superuser_roles, auth.proxy_role)
        base.update({"authorizationEnabled": "true", "superUserRoles": ",".join(roles),
                     "proxyRoles": auth.proxy_role})
        if auth.operator_token is not None:
            base.update({"brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
                         "brokerClientAuthenticationParameters":
                             f"file://{OPERATOR_TOKEN_DIR}/{auth.operator_token.key}"})
    return _with_overrides(base, spec.functions_worker.config)


def etcd_initial_cluster(spec: cluster_spec.ClusterSpec) -> str:
    name = naming.child_name(spec.name, naming.ETCD)
    members = [
        f"{name}-{i}=http://{name}-{i}.{name}-headless.{spec.namespace}.svc:{ETCD_PEER_PORT}"
        for i in range(spec.etcd.replicas)
    ]
    return ",".join(members)
