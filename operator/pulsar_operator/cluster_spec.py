"""PulsarCluster spec as typed records, with the CRD's defaults and rules.

The API server applies the CRD defaults and CEL rules, but the operator must
not depend on that (older servers, test emulators, edits that skipped
validation): `parse` fills the same defaults and `validate` enforces the same
rules, so an invalid spec is reported in status and changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

DEFAULT_IMAGE = "pulsar-py:0.1.0"
ENSEMBLE = "managedLedgerDefaultEnsembleSize"
WRITE_QUORUM = "managedLedgerDefaultWriteQuorum"
ACK_QUORUM = "managedLedgerDefaultAckQuorum"


@dataclasses.dataclass(frozen=True)
class Volume:
    size: str
    storage_class: str | None


@dataclasses.dataclass(frozen=True)
class Component:
    """Settings every StatefulSet-backed component shares."""

    enabled: bool
    replicas: int
    config: dict[str, str]
    resources: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Etcd:
    external_endpoints: tuple[str, ...]
    replicas: int
    image: str | None
    storage: Volume
    resources: dict[str, Any]

    @property
    def managed(self) -> bool:
        return not self.external_endpoints


@dataclasses.dataclass(frozen=True)
class Bookkeeper:
    component: Component
    journal: Volume
    ledgers: Volume
    rack_label: str | None


@dataclasses.dataclass(frozen=True)
class Proxy:
    component: Component
    service_type: str


@dataclasses.dataclass(frozen=True)
class SecretKey:
    """One key of a Secret in the cluster's namespace."""

    name: str
    key: str


@dataclasses.dataclass(frozen=True)
class Tls:
    """spec.tls: a Secret holding the certificate the brokers and proxy present (its keys as
    cert-manager writes them by default: tls.crt, tls.key, ca.crt)."""

    enabled: bool
    secret_name: str
    cert_key: str = "tls.crt"
    key_key: str = "tls.key"
    ca_key: str = "ca.crt"


@dataclasses.dataclass(frozen=True)
class Auth:
    """spec.auth: token authentication and authorization on brokers and proxy."""

    enabled: bool
    #: The HS256 key brokers and proxy verify tokens with (`pulsar tokens create-secret-key`).
    token_secret_key: SecretKey | None
    superuser_roles: tuple[str, ...]
    #: The superuser token the operator's own admin calls carry.
    operator_token: SecretKey | None
    #: The proxy's token towards brokers and its role (in proxyRoles and superUserRoles).
    proxy_token: SecretKey | None
    proxy_role: str = "proxy"


def _secret_key(raw: Any, default_key: str) -> SecretKey | None:
    data = _dict(raw)
    if not data.get("name"):
        return None
    return SecretKey(str(data["name"]), str(data.get("key") or default_key))


def _tls(raw: Any) -> Tls:
    data = _dict(raw)
    return Tls(enabled=bool(data.get("enabled", bool(data.get("secretName")))),
               secret_name=str(data.get("secretName") or ""),
               cert_key=str(data.get("certificateKey") or "tls.crt"),
               key_key=str(data.get("privateKeyKey") or "tls.key"),
               ca_key=str(data.get("caKey") or "ca.crt"))


def _auth(raw: Any) -> Auth:
    data = _dict(raw)
    return Auth(enabled=bool(data.get("enabled", False)),
                token_secret_key=_secret_key(data.get("tokenSecretKey"), "secret.key"),
                superuser_roles=tuple(str(r) for r in data.get("superUserRoles") or ()),
                operator_token=_secret_key(data.get("operatorToken"), "token"),
                proxy_token=_secret_key(data.get("proxyToken"), "token"),
                proxy_role=str(data.get("proxyRole") or "proxy"))


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    name: str
    namespace: str
    cluster_name: str
    image: str
    image_pull_policy: str
    etcd: Etcd
    bookkeeper: Bookkeeper
    broker: Component
    proxy: Proxy
    functions_worker: Component
    pod_policy: dict[str, Any]
    auto_recovery: dict[str, Any]
    decommission: dict[str, Any]
    #: persistentVolumeClaimRetentionPolicy.whenDeleted of the etcd and bookie StatefulSets.
    claims_when_deleted: str = "Retain"
    #: persistentVolumeClaimRetentionPolicy.whenScaled: Delete makes the decommission loop delete a
    #: removed bookie's claims once it is drained and gone (the StatefulSets keep Retain).
    claims_when_scaled: str = "Retain"
    tls: Tls = Tls(enabled=False, secret_name="")
    auth: Auth = Auth(enabled=False, token_secret_key=None, superuser_roles=(),
                      operator_token=None, proxy_token=None)


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _volume(raw: Any, default_size: str) -> Volume:
    data = _dict(raw)
    return Volume(size=str(data.get("size", default_size)), storage_class=data.get("storageClassName"))


def _component(raw: Any, replicas: int, enabled: bool = True) -> Component:
    data = _dict(raw)
    return Component(
        enabled=bool(data.get("enabled", enabled)),
        replicas=int(data.get("replicas", replicas)),
        config={str(k): str(v) for k, v in _dict(data.get("config")).items()},
        resources=_dict(data.get("resources")),
    )


def parse(body: dict[str, Any]) -> ClusterSpec:
    """Typed spec with defaults filled in; raises nothing on bad values (see validate)."""
    meta = _dict(body.get("metadata"))
    spec = _dict(body.get("spec"))
    etcd = _dict(spec.get("etcd"))
    bookkeeper = _dict(spec.get("bookkeeper"))
    proxy = _dict(spec.get("proxy"))
    name = str(meta.get("name", ""))
    return ClusterSpec(
        name=name,
        namespace=str(meta.get("namespace") or "default"),
        cluster_name=str(spec.get("clusterName") or name),
        image=str(spec.get("image") or DEFAULT_IMAGE),
        image_pull_policy=str(spec.get("imagePullPolicy") or "IfNotPresent"),
        etcd=Etcd(
            external_endpoints=tuple(str(e) for e in etcd.get("externalEndpoints") or ()),
            replicas=int(etcd.get("replicas", 1)),
            image=etcd.get("image"),
            storage=_volume(etcd.get("storage"), "1Gi"),
            resources=_dict(etcd.get("resources")),
        ),
        bookkeeper=Bookkeeper(
            component=_component(bookkeeper, 3),
            journal=_volume(bookkeeper.get("journal"), "1Gi"),
            ledgers=_volume(bookkeeper.get("ledgers"), "5Gi"),
            rack_label=bookkeeper.get("rackLabel"),
        ),
        broker=_component(spec.get("broker"), 1),
        proxy=Proxy(component=_component(proxy, 1), service_type=str(proxy.get("serviceType", "ClusterIP"))),
        functions_worker=_component(spec.get("functionsWorker"), 1, enabled=False),
        pod_policy=_dict(spec.get("podPolicy")),
        auto_recovery=_dict(spec.get("autoRecovery")),
        decommission=_dict(spec.get("decommission")),
        claims_when_deleted=str(
            _dict(spec.get("persistentVolumeClaimRetentionPolicy")).get("whenDeleted") or "Retain"),
        claims_when_scaled=str(
            _dict(spec.get("persistentVolumeClaimRetentionPolicy")).get("whenScaled") or "Retain"),
        tls=_tls(spec.get("tls")),
        auth=_auth(spec.get("auth")),
    )


def ensemble_settings(spec: ClusterSpec) -> tuple[int, int, int]:
    """(E, WQ, AQ) the brokers use: the overrides, else min(2, bookies) like Apache's 2/2/2."""
    default = min(2, spec.bookkeeper.component.replicas)
    config = spec.broker.config
    return (
        int(config.get(ENSEMBLE, default)),
        int(config.get(WRITE_QUORUM, default)),
        int(config.get(ACK_QUORUM, default)),
    )


def _check_int(config: dict[str, str], key: str, where: str, problems: list[str]) -> None:
    if key in config:
        try:
            int(config[key])
        except ValueError:
            problems.append(f"{where}.config.{key} must be an integer, got {config[key]!r}")


def validate(body: dict[str, Any]) -> list[str]:
    """Every broken rule, as messages naming the field (empty when valid)."""
    problems: list[str] = []
    try:
        spec = parse(body)
    except (TypeError, ValueError) as exc:
        return [f"spec has a value of the wrong type: {exc}"]
    for key in (ENSEMBLE, WRITE_QUORUM, ACK_QUORUM):
        _check_int(spec.broker.config, key, "spec.broker", problems)
    if problems:
        return problems
    bookies = spec.bookkeeper.component.replicas
    e, wq, aq = ensemble_settings(spec)
    if not 1 <= aq <= wq <= e:
        problems.append(
            f"managedLedgerDefault AckQuorum ({aq}) <= WriteQuorum ({wq}) <= EnsembleSize ({e}) must hold, all >= 1"
        )
    if e > bookies:
        problems.append(f"managedLedgerDefaultEnsembleSize ({e}) must be <= spec.bookkeeper.replicas ({bookies})")
    if bookies < 1:
        problems.append("spec.bookkeeper.replicas must be >= 1")
    for where, replicas in (
        ("spec.broker.replicas", spec.broker.replicas),
        ("spec.proxy.replicas", spec.proxy.component.replicas),
        ("spec.functionsWorker.replicas", spec.functions_worker.replicas),
    ):
        if replicas < 0:
            problems.append(f"{where} must be >= 0")
    if spec.etcd.managed and (spec.etcd.replicas < 1 or spec.etcd.replicas % 2 == 0):
        problems.append(f"spec.etcd.replicas must be odd and >= 1, got {spec.etcd.replicas}")
    if spec.proxy.service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        problems.append(f"spec.proxy.serviceType must be ClusterIP, NodePort or LoadBalancer, got {spec.proxy.service_type}")
    for when, value in (("whenDeleted", spec.claims_when_deleted), ("whenScaled", spec.claims_when_scaled)):
        if value not in ("Retain", "Delete"):
            problems.append(f"spec.persistentVolumeClaimRetentionPolicy.{when} must be Retain or Delete, got {value}")
    if not spec.name:
        problems.append("metadata.name is required")
    problems += _security_problems(spec)
    return problems


def _security_problems(spec: ClusterSpec) -> list[str]:
    problems = []
    if spec.tls.enabled and not spec.tls.secret_name:
        problems.append("spec.tls.secretName is required when spec.tls.enabled is true")
    auth = spec.auth
    if auth.enabled:
        if auth.token_secret_key is None:
            problems.append("spec.auth.tokenSecretKey.name is required when spec.auth.enabled")
        if auth.operator_token is None:
            problems.append("spec.auth.operatorToken.name is required when spec.auth.enabled "
                            "(the operator never uses an open port)")
        if not auth.superuser_roles:
            problems.append("spec.auth.superUserRoles must name the operator token's role")
        if spec.proxy.component.enabled and spec.proxy.component.replicas > 0 \
                and auth.proxy_token is None:
            problems.append("spec.auth.proxyToken.name is required when a proxy runs")
    return problems
