"""spec.tls and spec.auth of a PulsarCluster: what brokers and proxy are configured and mounted
with, what an incomplete spec is told, and what the operator's own admin calls carry."""

from __future__ import annotations

import base64
from typing import Any

import kubernetes_validate
import pytest
from pulsar_operator import admin, cluster_config, cluster_reconcile, cluster_spec
from pulsar_operator.plan import ObjectRef, Plan

from .test_cluster_reconcile import K8S_VERSION, NOW, Example, by, cluster

SECURE = {
    "tls": {"secretName": "pulsar-tls"},
    "auth": {"enabled": True, "tokenSecretKey": {"name": "token-key"},
             "superUserRoles": ["operator"], "operatorToken": {"name": "operator-token"},
             "proxyToken": {"name": "proxy-token", "key": "jwt"}},
}


def _lines(plan: Plan, component: str) -> set[str]:
    conf = by(plan.objects, "ConfigMap", f"pulsar-mini-{component}")["data"][f"{component}.conf"]
    return set(conf.splitlines())


def test_brokers_get_tls_ports_token_authentication_and_authorization(example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, **SECURE), {}, NOW)
    assert {"brokerServicePortTls=6651", "webServicePortTls=8443",
            "tlsCertificateFilePath=/pulsar/tls/tls.crt", "tlsKeyFilePath=/pulsar/tls/tls.key",
            "tlsTrustCertsFilePath=/pulsar/tls/ca.crt", "authenticationEnabled=true",
            f"authenticationProviders={cluster_config.TOKEN_PROVIDER}",
            "tokenSecretKey=file:///pulsar/auth/token-key/secret.key",
            "authorizationEnabled=true", "superUserRoles=operator,proxy",
            "proxyRoles=proxy"} <= _lines(plan, "broker")
    pod = by(plan.objects, "StatefulSet", "pulsar-mini-broker")["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"tls": "pulsar-tls", "token-key": "token-key"}
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert {"/pulsar/tls", "/pulsar/auth/token-key"} <= mounts
    ports = {p["containerPort"] for p in pod["containers"][0]["ports"]}
    assert {6650, 8080, 6651, 8443} <= ports


def test_the_proxy_talks_tls_to_brokers_with_its_own_token_and_forwards_client_roles(
        example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, **SECURE), {}, NOW)
    assert {"servicePortTls=6651", "webServicePortTls=8443", "tlsEnabledWithBroker=true",
            "brokerServiceURLTLS=pulsar+ssl://pulsar-mini-broker.pulsar.svc:6651",
            "brokerWebServiceURLTLS=https://pulsar-mini-broker.pulsar.svc:8443",
            "brokerClientTrustCertsFilePath=/pulsar/tls/ca.crt", "authenticationEnabled=true",
            "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "brokerClientAuthenticationParameters=file:///pulsar/auth/proxy-token/jwt",
            "forwardAuthorizationCredentials=true"} <= _lines(plan, "proxy")
    pod = by(plan.objects, "StatefulSet", "pulsar-mini-proxy")["spec"]["template"]["spec"]
    secrets = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"pulsar-tls", "token-key", "proxy-token"}


def test_the_functions_worker_authenticates_calls_and_reaches_brokers_over_tls_with_a_token(
        example: Example) -> None:
    plan = cluster_reconcile.reconcile(
        cluster(example, **SECURE, functionsWorker={"enabled": True}), {}, NOW)
    conf = by(plan.objects, "ConfigMap", "pulsar-mini-functions-worker")["data"]
    assert {"pulsarServiceUrl=pulsar+ssl://pulsar-mini-broker.pulsar.svc:6651",
            "pulsarWebServiceUrl=https://pulsar-mini-broker.pulsar.svc:8443",
            "tlsTrustCertsFilePath=/pulsar/tls/ca.crt", "authenticationEnabled=true",
            f"authenticationProviders={cluster_config.TOKEN_PROVIDER}",
            "tokenSecretKey=file:///pulsar/auth/token-key/secret.key",
            "authorizationEnabled=true", "superUserRoles=operator,proxy", "proxyRoles=proxy",
            "brokerClientAuthenticationPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "brokerClientAuthenticationParameters=file:///pulsar/auth/operator-token/token",
            } <= set(conf["functions_worker.conf"].splitlines())
    pod = by(plan.objects, "StatefulSet", "pulsar-mini-functions-worker")["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"tls": "pulsar-tls", "token-key": "token-key", "operator-token": "operator-token"}
    container = pod["containers"][0]
    assert not any("token" in arg for arg in container["command"])
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_secure_children_validate_and_the_operator_calls_the_https_port(example: Example) -> None:
    body = cluster(example, **SECURE)
    plan = cluster_reconcile.reconcile(body, {}, NOW)
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    spec = cluster_spec.parse(body)
    assert cluster_config.admin_url(spec) == "https://pulsar-mini-broker.pulsar.svc:8443"
    # In-cluster readers (Spark, functions) keep the plain URL of the status.
    assert plan.status["webServiceURL"] == "http://pulsar-mini-broker.pulsar.svc:8080"


def test_without_security_nothing_changes(example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    broker = _lines(plan, "broker")
    assert not any(line.startswith(("tls", "authentication", "brokerServicePortTls"))
                   for line in broker)
    assert cluster_config.admin_url(cluster_spec.parse(cluster(example))) == \
        plan.status["webServiceURL"] == "http://pulsar-mini-broker.pulsar.svc:8080"


@pytest.mark.parametrize(("auth", "message"), [
    ({"enabled": True, "superUserRoles": ["operator"], "operatorToken": {"name": "t"},
      "proxyToken": {"name": "p"}}, "spec.auth.tokenSecretKey.name is required"),
    ({"enabled": True, "tokenSecretKey": {"name": "k"}, "superUserRoles": ["operator"],
      "proxyToken": {"name": "p"}}, "spec.auth.operatorToken.name is required"),
    ({"enabled": True, "tokenSecretKey": {"name": "k"}, "superUserRoles": ["operator"],
      "operatorToken": {"name": "t"}}, "spec.auth.proxyToken.name is required"),
])
def test_an_incomplete_auth_spec_is_refused(example: Example, auth: dict[str, Any],
                                            message: str) -> None:
    problems = cluster_spec.validate(cluster(example, auth=auth))
    assert any(message in problem for problem in problems), problems


class _Secrets:
    def __init__(self, secrets: dict[str, dict[str, Any]]) -> None:
        self.secrets = secrets

    async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        assert ref.kind == "Secret" and ref.namespace == "pulsar"
        return self.secrets.get(ref.name)


def _data(**values: str) -> dict[str, Any]:
    return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}}


async def test_the_operator_calls_with_the_superuser_token_and_the_clusters_ca(
        example: Example) -> None:
    spec = cluster_spec.parse(cluster(example, **SECURE))
    secrets = _Secrets({"operator-token": _data(token="eyJ.operator\n"),
                        "pulsar-tls": _data(**{"ca.crt": "PEM", "tls.crt": "x", "tls.key": "y"})})
    found = await admin.credentials_for(spec, secrets)  # type: ignore[arg-type]
    assert found == admin.AdminCredentials(token="eyJ.operator", ca_pem="PEM")
    assert found.headers() == {"Authorization": "Bearer eyJ.operator"}


async def test_a_missing_token_secret_is_a_retriable_admin_error(example: Example) -> None:
    spec = cluster_spec.parse(cluster(example, **SECURE))
    with pytest.raises(admin.errors.AdminApiError) as failure:
        await admin.credentials_for(spec, _Secrets({}))  # type: ignore[arg-type]
    assert failure.value.retriable
