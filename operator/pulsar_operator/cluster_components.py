"""The children of a PulsarCluster, component by component.

Each `*_objects` function returns the ConfigMap, Services, StatefulSet (and
for bookies the PodDisruptionBudget) of one component, with the command line,
ports and health probes of SERVICES.md.
"""

from __future__ import annotations

from typing import Any

from pulsar_operator import cluster_config as cc
from pulsar_operator import cluster_spec, naming, workloads

CONFIG_VOLUME = "config"


def _meta(body: dict[str, Any], spec: cluster_spec.ClusterSpec, name: str, component: str) -> dict[str, Any]:
    return naming.child_metadata(body, name, component, spec.image)


def _pod_labels(spec: cluster_spec.ClusterSpec, component: str) -> dict[str, str]:
    result = naming.labels(spec.name, component, naming.image_tag(spec.image))
    result.update(spec.pod_policy.get("labels") or {})
    return result


def _pod_annotations(spec: cluster_spec.ClusterSpec, conf_hash: str) -> dict[str, str]:
    result = dict(spec.pod_policy.get("annotations") or {})
    result[workloads.CONFIG_HASH_ANNOTATION] = conf_hash
    return result


def _container(
    spec: cluster_spec.ClusterSpec,
    name: str,
    command: list[str],
    ports: dict[str, int],
    resources: dict[str, Any],
    readiness: dict[str, Any],
    liveness: dict[str, Any],
    mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": command,
        "env": workloads.pod_env(),
        "ports": workloads.container_ports(ports),
        "readinessProbe": readiness,
        "livenessProbe": liveness,
        "volumeMounts": mounts,
    }
    if res := workloads.resources_of(resources):
        container["resources"] = res
    return container


def _config_volume(config_map_name: str) -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "configMap": {"name": config_map_name}}


def _config_mount() -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "mountPath": cc.CONF_DIR, "readOnly": True}


def _advertised(spec: cluster_spec.ClusterSpec, component: str) -> str:
    headless = naming.child_name(spec.name, component) + "-headless"
    return f"advertisedAddress=$(POD_NAME).{headless}.{spec.namespace}.svc"


#: Servers listen on the pod's own address (POD_IP, from the downward API), not 0.0.0.0.
BIND_POD_IP = ["--conf", "bindAddress=$(POD_IP)"]


def _service_pair(
    body: dict[str, Any],
    spec: cluster_spec.ClusterSpec,
    component: str,
    ports: dict[str, int],
    service_type: str = "ClusterIP",
) -> list[dict[str, Any]]:
    """A client Service and the headless Service that gives pods stable DNS names."""
    name = naming.child_name(spec.name, component)
    selector = naming.selector_labels(spec.name, component)
    return [
        workloads.service(_meta(body, spec, name, component), selector, ports, service_type=service_type),
        workloads.service(_meta(body, spec, f"{name}-headless", component), selector, ports,
                          headless=True, publish_not_ready=True),
    ]


def _stateless(
    body: dict[str, Any],
    spec: cluster_spec.ClusterSpec,
    component: str,
    replicas: int,
    conf_file: str,
    conf: dict[str, str],
    container: dict[str, Any],
    secret_volumes: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """ConfigMap + StatefulSet of a component without data volumes (broker, proxy, worker);
    secret_volumes are the Secrets spec.tls and spec.auth mount."""
    name = naming.child_name(spec.name, component)
    selector = naming.selector_labels(spec.name, component)
    conf_text = cc.render(conf)
    pod = workloads.pod_spec([container], spec.pod_policy, selector,
                             volumes=[_config_volume(name), *(secret_volumes or [])])
    return [
        workloads.config_map(_meta(body, spec, name, component), {conf_file: conf_text}),
        workloads.stateful_set(
            _meta(body, spec, name, component), replicas=replicas, selector=selector,
            service_name=f"{name}-headless", pod_labels=_pod_labels(spec, component),
            pod_annotations=_pod_annotations(spec, workloads.config_hash(conf_text)), spec=pod,
        ),
    ]


def etcd_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec) -> list[dict[str, Any]]:
    name = naming.child_name(spec.name, naming.ETCD)
    headless = f"{name}-headless.{spec.namespace}.svc"
    selector = naming.selector_labels(spec.name, naming.ETCD)
    command = [
        "etcd", "--name", "$(POD_NAME)", "--data-dir", "/var/lib/etcd",
        "--listen-client-urls", f"http://$(POD_IP):{cc.ETCD_CLIENT_PORT}",
        "--advertise-client-urls", f"http://$(POD_NAME).{headless}:{cc.ETCD_CLIENT_PORT}",
        "--listen-peer-urls", f"http://$(POD_IP):{cc.ETCD_PEER_PORT}",
        "--initial-advertise-peer-urls", f"http://$(POD_NAME).{headless}:{cc.ETCD_PEER_PORT}",
        "--initial-cluster", cc.etcd_initial_cluster(spec),
        "--initial-cluster-state", "new", "--initial-cluster-token", name,
    ]
    ports = {"client": cc.ETCD_CLIENT_PORT, "peer": cc.ETCD_PEER_PORT}
    probe = workloads.http_probe("/health", cc.ETCD_CLIENT_PORT, initial_delay_s=5)
    container = _container(spec, "etcd", command, ports, spec.etcd.resources, probe, probe,
                           [{"name": "data", "mountPath": "/var/lib/etcd"}])
    container["image"] = spec.etcd.image or spec.image
    pod = workloads.pod_spec([container], spec.pod_policy, selector)
    claims = [workloads.volume_claim("data", spec.etcd.storage.size, spec.etcd.storage.storage_class)]
    sts = workloads.stateful_set(
        _meta(body, spec, name, naming.ETCD), replicas=spec.etcd.replicas, selector=selector,
        service_name=f"{name}-headless", pod_labels=_pod_labels(spec, naming.ETCD),
        pod_annotations=_pod_annotations(spec, workloads.config_hash(command)), spec=pod,
        claims=claims, claims_when_deleted=spec.claims_when_deleted, parallel=True,
    )
    return _service_pair(body, spec, naming.ETCD, {"client": cc.ETCD_CLIENT_PORT}) + [sts]


def bookie_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec, replicas: int) -> list[dict[str, Any]]:
    bk = spec.bookkeeper
    name = naming.child_name(spec.name, naming.BOOKIE)
    selector = naming.selector_labels(spec.name, naming.BOOKIE)
    conf_text = cc.render(cc.bookkeeper_conf(spec))
    command = ["pulsar", "bookie", "--config", f"{cc.CONF_DIR}/bookkeeper.conf",
               "--conf", f"advertisedAddress=$(POD_NAME).{name}.{spec.namespace}.svc",
               "--conf", "bookieBindAddress=$(POD_IP)", "--conf", "httpServerHost=$(POD_IP)"]
    ports = {"bookie": cc.BOOKIE_PORT, "http": cc.BOOKIE_HTTP_PORT}
    mounts = [
        _config_mount(),
        {"name": "journal", "mountPath": f"{cc.DATA_DIR}/journal"},
        {"name": "ledgers", "mountPath": f"{cc.DATA_DIR}/ledgers"},
    ]
    container = _container(
        spec, "bookie", command, ports, bk.component.resources,
        workloads.http_probe("/api/v1/bookie/is_ready", cc.BOOKIE_HTTP_PORT, initial_delay_s=5),
        workloads.http_probe("/heartbeat", cc.BOOKIE_HTTP_PORT, initial_delay_s=30),
        mounts,
    )
    spread = []
    if bk.rack_label:
        container["env"].append({"name": "PULSAR_BOOKIE_RACK_LABEL", "value": bk.rack_label})
        spread.append({"maxSkew": 1, "topologyKey": bk.rack_label, "whenUnsatisfiable": "ScheduleAnyway",
                       "labelSelector": {"matchLabels": dict(selector)}})
    pod = workloads.pod_spec([container], spec.pod_policy, selector, volumes=[_config_volume(name)],
                             extra_affinity=workloads.anti_affinity(selector), extra_spread=spread)
    claims = [
        workloads.volume_claim("journal", bk.journal.size, bk.journal.storage_class),
        workloads.volume_claim("ledgers", bk.ledgers.size, bk.ledgers.storage_class),
    ]
    def meta() -> dict[str, Any]:
        return _meta(body, spec, name, naming.BOOKIE)

    return [
        workloads.config_map(meta(), {"bookkeeper.conf": conf_text}),
        workloads.service(meta(), selector, ports, headless=True, publish_not_ready=True),
        workloads.stateful_set(
            meta(), replicas=replicas, selector=selector, service_name=name,
            pod_labels=_pod_labels(spec, naming.BOOKIE),
            pod_annotations=_pod_annotations(spec, workloads.config_hash(conf_text)),
            spec=pod, claims=claims, claims_when_deleted=spec.claims_when_deleted, parallel=True,
        ),
        workloads.pod_disruption_budget(meta(), selector, 1),
    ]


def broker_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec) -> list[dict[str, Any]]:
    command = ["pulsar", "broker", "--config", f"{cc.CONF_DIR}/broker.conf",
               "--conf", _advertised(spec, naming.BROKER), *BIND_POD_IP]
    ports = {"pulsar": cc.BROKER_PORT, "http": cc.WEB_PORT, **cc.tls_ports(spec)}
    volumes, mounts = cc.secret_volumes(spec, naming.BROKER)
    container = _container(
        spec, "broker", command, ports, spec.broker.resources,
        workloads.http_probe("/admin/v2/brokers/ready", cc.WEB_PORT, initial_delay_s=5),
        workloads.http_probe("/status.html", cc.WEB_PORT, initial_delay_s=30),
        [_config_mount(), *mounts],
    )
    return (_service_pair(body, spec, naming.BROKER, ports)
            + _stateless(body, spec, naming.BROKER, spec.broker.replicas, "broker.conf",
                         cc.broker_conf(spec), container, volumes))


def proxy_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec) -> list[dict[str, Any]]:
    command = ["pulsar", "proxy", "--config", f"{cc.CONF_DIR}/proxy.conf", *BIND_POD_IP]
    ports = {"pulsar": cc.BROKER_PORT, "http": cc.WEB_PORT, **cc.tls_ports(spec)}
    volumes, mounts = cc.secret_volumes(spec, naming.PROXY)
    probe = workloads.http_probe("/status.html", cc.WEB_PORT, initial_delay_s=5)
    container = _container(spec, "proxy", command, ports, spec.proxy.component.resources, probe,
                           workloads.http_probe("/status.html", cc.WEB_PORT, initial_delay_s=30),
                           [_config_mount(), *mounts])
    return (_service_pair(body, spec, naming.PROXY, ports, spec.proxy.service_type)
            + _stateless(body, spec, naming.PROXY, spec.proxy.component.replicas, "proxy.conf",
                         cc.proxy_conf(spec), container, volumes))


def functions_worker_objects(body: dict[str, Any], spec: cluster_spec.ClusterSpec) -> list[dict[str, Any]]:
    """`pulsar functions-worker` pods: each registers under its pod DNS name in the metadata
    store, where the brokers find it to forward /admin/v3/functions, and runs the instances
    assigned to it as processes in its pod (their files in an emptyDir)."""
    headless = naming.child_name(spec.name, naming.FUNCTIONS_WORKER) + "-headless"
    command = ["pulsar", "functions-worker", "--config", f"{cc.CONF_DIR}/functions_worker.conf",
               "--conf", "workerId=$(POD_NAME)",
               "--conf", f"workerHostname=$(POD_NAME).{headless}.{spec.namespace}.svc", *BIND_POD_IP]
    ports = {"http": cc.FUNCTIONS_WORKER_PORT}
    volumes, mounts = cc.secret_volumes(spec, naming.FUNCTIONS_WORKER)
    container = _container(
        spec, "functions-worker", command, ports, spec.functions_worker.resources,
        workloads.http_probe("/status.html", cc.FUNCTIONS_WORKER_PORT, initial_delay_s=5),
        workloads.http_probe("/status.html", cc.FUNCTIONS_WORKER_PORT, initial_delay_s=30),
        [_config_mount(), {"name": "functions", "mountPath": cc.FUNCTIONS_DIR}, *mounts],
    )
    return (_service_pair(body, spec, naming.FUNCTIONS_WORKER, ports)
            + _stateless(body, spec, naming.FUNCTIONS_WORKER, spec.functions_worker.replicas,
                         "functions_worker.conf", cc.functions_worker_conf(spec), container,
                         [{"name": "functions", "emptyDir": {}}, *volumes]))


def service_urls_config_map(body: dict[str, Any], spec: cluster_spec.ClusterSpec) -> dict[str, Any]:
    """`<cluster>-service-urls`: the keys function-mesh's spec.pulsar.pulsarConfig expects."""
    name = naming.child_name(spec.name, "service-urls")
    return workloads.config_map(_meta(body, spec, name, naming.BROKER), {
        "webServiceURL": cc.web_service_url(spec),
        "brokerServiceURL": cc.broker_service_url(spec),
    })
