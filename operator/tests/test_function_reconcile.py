"""Function (ours and function-mesh's) -> ConfigMap, StatefulSet of instances, headless Service, HPA (pure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
from pulsar_functions import config as instance_config
from pulsar_operator import function_reconcile, function_spec, naming

NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:05:00Z"
IMAGE = "pulsar-py:test"
K8S_VERSION = "1.37.0"
Example = Callable[[str], dict[str, Any]]
#: function-mesh's own Python sample (.ci/tests/integration/cases/python-function/manifests.yaml), its Function part.
FUNCTION_MESH_SAMPLE: dict[str, Any] = {
    "apiVersion": "compute.functionmesh.io/v1alpha1", "kind": "Function",
    "metadata": {"name": "py-function-sample", "namespace": "default", "uid": "u-1", "generation": 1},
    "spec": {
        "image": "streamnative/pulsar-functions-python-sample:3.2.2.1",
        "className": "exclamation_function.ExclamationFunction", "forwardSourceMessageProperty": True,
        "maxPendingAsyncRequests": 1000, "replicas": 3, "logTopic": "persistent://public/default/py-function-logs",
        "input": {"topics": ["persistent://public/default/input-python-topic"]},
        "output": {"topic": "persistent://public/default/output-python-topic"},
        "resources": {"requests": {"cpu": "50m", "memory": "1G"}, "limits": {"cpu": "0.2", "memory": "1.1G"}},
        "secretsMap": {"name": {"path": "test-py-secret", "key": "username"},
                       "pwd": {"path": "test-py-secret", "key": "password"}},
        "pulsar": {"pulsarConfig": "test-py-pulsar"},
        "python": {"py": "/pulsar/examples/python-examples/exclamation_function.py"},
        "clusterName": "test", "autoAck": True,
    },
}


def function(example: Example, **changes: Any) -> dict[str, Any]:
    body = example("function.yaml")
    body["metadata"].update(namespace="default", uid="u-1", generation=1)
    for key, value in changes.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def reconcile(body: dict[str, Any], observed: dict[str, Any] | None = None,
              cluster_status: dict[str, Any] | None = None) -> Any:
    return function_reconcile.reconcile(body, observed, image=IMAGE, cluster_status=cluster_status, now=NOW)


def by_kind(plan: Any, kind: str) -> dict[str, Any]:
    return next(o for o in plan.objects if o["kind"] == kind)


def container(plan: Any) -> dict[str, Any]:
    return by_kind(plan, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[no-any-return]


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


@pytest.mark.parametrize("api_version", [naming.FUNCTION_MESH_API_VERSION, naming.API_VERSION])
def test_a_function_becomes_config_service_instances_and_an_hpa_owned_by_it(example: Example,
                                                                             api_version: str) -> None:
    body = function(example)
    body["apiVersion"] = api_version
    plan = reconcile(body)
    assert {(o["kind"], o["metadata"]["name"]) for o in plan.objects} == {
        ("ConfigMap", "exclamation-function"), ("Service", "exclamation-function"),
        ("StatefulSet", "exclamation-function"), ("HorizontalPodAutoscaler", "exclamation-function")}
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        assert obj["metadata"]["ownerReferences"][0] == {
            "apiVersion": api_version, "kind": "Function", "name": "exclamation", "uid": "u-1",
            "controller": True, "blockOwnerDeletion": True}
    assert by_kind(plan, "Service")["spec"]["clusterIP"] == "None"
    assert by_kind(plan, "StatefulSet")["spec"]["podManagementPolicy"] == "Parallel"


def test_function_json_carries_the_spec_in_the_instance_s_keys(example: Example) -> None:
    plan = reconcile(function(example, funcConfig={"suffix": "!"}, timeout=30000, retainOrdering=True,
                              secretsMap={"apiToken": {"path": "exclamation-secrets", "key": "token"}}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config == {
        "tenant": "public", "namespace": "default", "name": "exclamation",
        "className": "pulsar_functions.examples.exclamation_function.ExclamationFunction", "runtime": "PYTHON",
        "inputs": ["persistent://public/default/in"], "output": "persistent://public/default/out",
        "logTopic": "persistent://public/default/exclamation-logs", "processingGuarantee": "ATLEAST_ONCE",
        "subscriptionName": "exclamation-sub", "autoAck": True, "maxMessageRetries": 3,
        "deadLetterTopic": "persistent://public/default/exclamation-dlq", "timeoutMs": 30000,
        "retainOrdering": True, "userConfig": {"suffix": "!"}, "secretsMap": {"apiToken": "PULSAR_SECRET_APITOKEN"},
    }


def test_avro_inputs_and_outputs_take_function_mesh_s_schema_fields(example: Example) -> None:
    plan = reconcile(function(example, input={"topics": ["in"], "customSchemaSources": {"in": "AVRO"},
                                              "typeClassName": "schemas.Greeting"},
                              output={"topic": "out", "sinkSchemaType": "AVRO", "typeClassName": "schemas.Reply"}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert (config["customSchemaInputs"], config["inputTypeClassName"]) == ({"in": "AVRO"}, "schemas.Greeting")
    assert (config["outputSchemaType"], config["outputTypeClassName"]) == ("AVRO", "schemas.Reply")
    assert plan.status["ignoredFields"] is None


def test_the_config_is_what_pulsar_function_instance_parses(example: Example) -> None:
    from pulsar_functions import config

    text = by_kind(reconcile(function(example, subscriptionPosition="earliest")), "ConfigMap")["data"]["function.json"]
    parsed = config.loads(text)
    assert parsed.fqfn == "public/default/exclamation"
    assert parsed.subscription_position is config.SubscriptionPosition.EARLIEST
    assert parsed.max_message_retries == 3 and parsed.py is None and parsed.py_location is None


def test_instances_run_pulsar_function_instance_on_their_pod_address(example: Example) -> None:
    plan = reconcile(function(example))
    main = container(plan)
    assert main["command"] == ["pulsar", "function-instance", "--config", "/pulsar/conf/function.json",
                               "--metrics-host", "$(POD_IP)", "--metrics-port", "9094", "--work-dir", "/pulsar/work",
                               "--service-url", "$(brokerServiceURL)"]
    assert main["image"] == IMAGE
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in main["env"]
    assert main["envFrom"] == [{"configMapRef": {"name": "pulsar-mini-service-urls"}}]
    assert main["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 9094}
    assert main["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}
    volumes = by_kind(plan, "StatefulSet")["spec"]["template"]["spec"]["volumes"]
    assert volumes == [{"name": "config", "configMap": {"name": "exclamation-function"}},
                       {"name": "work", "emptyDir": {}}]


def test_function_mesh_s_python_sample_runs_its_file_with_its_secrets_and_cluster_name() -> None:
    plan = reconcile(FUNCTION_MESH_SAMPLE)
    main = container(plan)
    assert main["image"] == "streamnative/pulsar-functions-python-sample:3.2.2.1"
    assert main["command"][-4:] == ["--cluster-name", "test", "--service-url", "$(brokerServiceURL)"]
    assert {"name": "PULSAR_SECRET_PWD",
            "valueFrom": {"secretKeyRef": {"name": "test-py-secret", "key": "password"}}} in main["env"]
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config["py"] == "/pulsar/examples/python-examples/exclamation_function.py"
    assert config["secretsMap"] == {"name": "PULSAR_SECRET_NAME", "pwd": "PULSAR_SECRET_PWD"}
    assert by_kind(plan, "StatefulSet")["spec"]["replicas"] == 3
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in plan.objects}
    assert plan.status["ignoredFields"] == [
        {"field": "spec.maxPendingAsyncRequests", "reason": "asynchronous functions are not supported"}]


def test_accepted_fields_without_effect_are_listed_with_the_reason(example: Example) -> None:
    body = function(example, statefulConfig={"pulsar": {"serviceUrl": "bk://x:4181"}}, windowConfig={"windowLength": 3},
                    retainKeyOrdering=True, forwardSourceMessageProperty=False, cleanupSubscription=True,
                    colour="blue", python={"py": "f.py", "pyLocation": "public/default/pkg"},
                    input={"topics": ["in"], "typeClassName": "schemas.Greeting",
                           "sourceSpecs": {"in": {"schemaType": "STRING", "receiverQueueSize": 5}}},
                    output={"topic": "out", "producerConf": {"maxPendingMessages": 10}},
                    pulsar={"pulsarConfig": "urls", "authConfig": {"oauth2Config": {"audience": "a"}},
                            "tlsConfig": {"enabled": True, "certSecretName": "ca", "certSecretKey": "ca.crt",
                                          "caFile": "x"}},
                    pod={"labels": {"a": "b"}, "vpa": {"x": 1}, "builtinAutoscaler": ["Sometimes"]})
    plan = reconcile(body)
    assert [f["field"] for f in plan.status["ignoredFields"]] == [
        "spec.colour", "spec.retainKeyOrdering", "spec.statefulConfig", "spec.windowConfig",
        "spec.input.sourceSpecs.in.receiverQueueSize", "spec.output.producerConf",
        "spec.pulsar.authConfig", "spec.pulsar.tlsConfig.caFile", "spec.pod.vpa", "spec.pod.builtinAutoscaler[0]", "spec.python.pyLocation",
        "spec.forwardSourceMessageProperty", "spec.cleanupSubscription"]
    reasons = {f["field"]: f["reason"] for f in plan.status["ignoredFields"]}
    assert reasons["spec.colour"] == "not a field this operator knows"
    assert "topic" in reasons["spec.statefulConfig"]
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert "pyLocation" not in config and config["inputSpecs"] == {"in": {"schemaType": "STRING"}}
    assert reconcile(function(example)).status["ignoredFields"] is None


URLS = {"webServiceURL": "http://sn-platform-pulsar-broker:8080", "brokerServiceURL": "pulsar://sn:6650"}


@pytest.mark.parametrize("url", ["https://example.com/code/exclamation.zip", "http://files.local/exclamation.py",
                                 "file:///pulsar/code/exclamation.py"])
def test_a_py_location_url_is_handed_to_the_instance_to_download(example: Example, url: str) -> None:
    plan = reconcile(function(example, python={"py": "/pulsar/exclamation.zip", "pyLocation": url}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert (config["py"], config["pyLocation"]) == ("/pulsar/exclamation.zip", url)
    assert "webServiceUrl" not in config  # the instance fetches it by itself
    assert plan.status["ignoredFields"] is None
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("url", ["function://public/default/exclamation@v1", "function://t/ns/exclamation"])
def test_a_package_url_is_downloaded_from_the_pulsar_config_s_web_service_url(example: Example, url: str) -> None:
    """function-mesh's form: py names the file, pyLocation the package in the brokers' packages management."""
    body = function(example, python={"py": "exclamation_function.py", "pyLocation": url})
    plan = function_reconcile.reconcile(body, None, image=IMAGE, cluster_status=None, now=NOW, pulsar_config=URLS)
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert (config["pyLocation"], config["webServiceUrl"]) == (url, "http://sn-platform-pulsar-broker:8080")
    assert "brokerServiceUrl" not in config  # still $(brokerServiceURL) from the ConfigMap
    parsed = instance_config.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert (parsed.py_location, parsed.web_service_url) == (url, "http://sn-platform-pulsar-broker:8080")
    assert plan.status["ignoredFields"] is None
    assert condition(plan.status, "Ready")["reason"] == "InstancesNotReady"
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_a_package_url_with_a_cluster_ref_is_downloaded_from_the_cluster_s_web_service_url(
        example: Example) -> None:
    body = function(example, pulsar=None, clusterRef={"name": "pulsar-mini"},
                    python={"pyLocation": "function://public/default/exclamation@v1"})
    plan = reconcile(body, cluster_status={"brokerServiceURL": "pulsar://b:6650", "webServiceURL": "http://b:8080"})
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert (config["brokerServiceUrl"], config["webServiceUrl"]) == ("pulsar://b:6650", "http://b:8080")
    waiting = reconcile(body, cluster_status={"brokerServiceURL": "pulsar://b:6650"})
    assert waiting.objects == ()
    assert condition(waiting.status, "Ready")["reason"] == "ClusterNotReady"
    assert "webServiceURL" in condition(waiting.status, "Ready")["message"]


def test_a_package_url_without_a_web_service_url_to_fetch_it_from_is_reported(example: Example) -> None:
    body = function(example, python={"pyLocation": "function://public/default/exclamation@v1"})
    for pulsar_config in (None, {"brokerServiceURL": "pulsar://b:6650"}):
        plan = function_reconcile.reconcile(body, None, image=IMAGE, cluster_status=None, now=NOW,
                                            pulsar_config=pulsar_config)
        assert plan.objects == ()
        ready = condition(plan.status, "Ready")
        assert ready["reason"] == "NoWebServiceURL" and "pulsar-mini-service-urls" in ready["message"]


def test_a_package_url_is_fetched_with_the_instance_s_broker_credentials(example: Example) -> None:
    """The instance downloads with the same mounted credentials and TLS trust it connects with."""
    body = function(example, pulsar={**SECURED_PULSAR, "pulsarConfig": "secure-urls"},
                    python={"pyLocation": "function://public/default/exclamation@v1"})
    plan = function_reconcile.reconcile(body, None, image=IMAGE, cluster_status=None, now=NOW,
                                        pulsar_config={"webServiceURL": "https://brokers:8443"})
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config["webServiceUrl"] == "https://brokers:8443"
    command = container(plan)["command"]
    assert "--client-auth-dir" in command and "--tls-trust-certs-file" in command
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_function_json_names_no_web_service_url_when_the_code_is_no_package(example: Example) -> None:
    plan = function_reconcile.reconcile(function(example), None, image=IMAGE, cluster_status=None, now=NOW,
                                        pulsar_config=URLS)
    assert "webServiceUrl" not in json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])


def test_pod_settings_reach_the_instance_pods(example: Example) -> None:
    pod = {"labels": {"team": "a", "app.kubernetes.io/instance": "hijack"}, "annotations": {"note": "x"},
           "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
           "serviceAccountName": "fn", "env": [{"name": "EXTRA", "value": "1"}],
           "volumes": [{"name": "data", "emptyDir": {}}], "imagePullSecrets": [{"name": "reg"}],
           "sidecars": [{"name": "side", "image": "busybox", "command": ["sleep", "1d"]}],
           "terminationGracePeriodSeconds": 5, "liveness": {"initialDelaySeconds": 7, "periodSeconds": 3}}
    plan = reconcile(function(example, pod=pod, volumeMounts=[{"name": "data", "mountPath": "/data"}],
                              imagePullPolicy="Always"))
    template = by_kind(plan, "StatefulSet")["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["metadata"]["labels"]["app.kubernetes.io/instance"] == "exclamation"
    assert template["metadata"]["annotations"]["note"] == "x"
    spec = template["spec"]
    assert (spec["nodeSelector"], spec["serviceAccountName"], spec["terminationGracePeriodSeconds"]) == (
        {"disk": "ssd"}, "fn", 5)
    assert [c["name"] for c in spec["containers"]] == ["pulsar-function", "side"]
    assert spec["imagePullSecrets"] == [{"name": "reg"}]
    main = container(plan)
    assert main["env"][-1] == {"name": "EXTRA", "value": "1"} and main["imagePullPolicy"] == "Always"
    assert {"name": "data", "mountPath": "/data"} in main["volumeMounts"]
    assert (main["livenessProbe"]["initialDelaySeconds"], main["livenessProbe"]["periodSeconds"]) == (7, 3)
    assert plan.status["ignoredFields"] is None
    kubernetes_validate.validate(by_kind(plan, "StatefulSet"), K8S_VERSION, strict=True)


@pytest.mark.parametrize(("changes", "minimum", "maximum"), [
    ({"maxReplicas": 3}, 1, 3),
    ({"maxReplicas": 5, "minReplicas": 2}, 2, 5),
    ({"maxReplicas": 4, "replicas": 2}, 1, 4),
])
def test_the_hpa_scales_the_function_between_min_and_max(example: Example, changes: dict[str, Any], minimum: int,
                                                         maximum: int) -> None:
    hpa = by_kind(reconcile(function(example, **changes)), "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (minimum, maximum)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": naming.FUNCTION_MESH_API_VERSION, "kind": "Function",
                                             "name": "exclamation"}
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]


def test_the_hpa_takes_function_mesh_s_autoscaler_settings(example: Example) -> None:
    pods_metric = {"type": "Pods", "pods": {"metric": {"name": "pulsar_function_received_rate"},
                                            "target": {"type": "AverageValue", "averageValue": "100"}}}
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    builtin = reconcile(function(example, pod={"builtinAutoscaler": [
        "AverageUtilizationCPUPercent50", "AverageUtilizationMemoryPercent20"]}))
    assert [m["resource"]["name"] + str(m["resource"]["target"]["averageUtilization"])
            for m in by_kind(builtin, "HorizontalPodAutoscaler")["spec"]["metrics"]] == ["cpu50", "memory20"]
    custom = by_kind(reconcile(function(example, pod={"autoScalingMetrics": [pods_metric],
                                                      "autoScalingBehavior": behavior})), "HorizontalPodAutoscaler")
    assert custom["spec"]["metrics"] == [pods_metric] and custom["spec"]["behavior"] == behavior
    kubernetes_validate.validate(custom, K8S_VERSION, strict=True)


def test_without_max_replicas_the_hpa_is_deleted_and_replicas_come_from_the_spec(example: Example) -> None:
    plan = reconcile(function(example, maxReplicas=None, replicas=2))
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in plan.objects}
    assert [(r.kind, r.name) for r in plan.deletions] == [("HorizontalPodAutoscaler", "exclamation-function")]
    assert by_kind(plan, "StatefulSet")["spec"]["replicas"] == 2


def test_scaling_changes_the_replica_count_and_not_the_config(example: Example) -> None:
    one, three = reconcile(function(example, replicas=1)), reconcile(function(example, replicas=3))
    assert by_kind(three, "StatefulSet")["spec"]["replicas"] == 3
    assert by_kind(one, "ConfigMap") == by_kind(three, "ConfigMap")
    hash_of = [by_kind(p, "StatefulSet")["spec"]["template"]["metadata"]["annotations"] for p in (one, three)]
    assert hash_of[0] == hash_of[1]


def test_status_follows_the_statefulset(example: Example) -> None:
    observed = {"spec": {"replicas": 1}, "status": {"replicas": 1, "readyReplicas": 1}}
    status = reconcile(function(example), observed).status
    assert (status["replicas"], status["readyReplicas"]) == (1, 1)
    assert condition(status, "Ready")["status"] == "True"
    assert status["selector"] == ("app.kubernetes.io/component=function,app.kubernetes.io/instance=exclamation,"
                                  "app.kubernetes.io/name=pulsar")
    waiting = reconcile(function(example, replicas=2), observed).status
    assert condition(waiting, "Ready")["status"] == "False"
    assert condition(waiting, "Ready")["message"] == "1/2 instances ready"
    scaling_down = reconcile(function(example, replicas=0), observed).status
    assert condition(scaling_down, "Ready")["status"] == "False"
    stopped = reconcile(function(example, replicas=0), {"status": {"replicas": 0}}).status
    assert condition(stopped, "Ready")["status"] == "True"


def test_a_cluster_ref_gives_the_instances_the_cluster_s_broker_url(example: Example) -> None:
    body = function(example, pulsar=None, clusterRef={"name": "pulsar-mini"})
    plan = reconcile(body, cluster_status={"brokerServiceURL": "pulsar://b:6650", "webServiceURL": "http://b:8080"})
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config["brokerServiceUrl"] == "pulsar://b:6650"
    assert "--service-url" not in container(plan)["command"] and "envFrom" not in container(plan)
    waiting = reconcile(body, cluster_status=None)
    assert waiting.objects == () and condition(waiting.status, "Ready")["reason"] == "ClusterNotReady"


@pytest.mark.parametrize(("changes", "message"), [
    ({"className": None}, "spec.className is required"),
    ({"input": {}}, "spec.input.topics or spec.input.topicPattern is required"),
    ({"python": None, "java": {"jar": "x.jar"}}, "only Python functions are supported; spec.java was given"),
    ({"python": None}, "spec.python is required"),
    ({"processingGuarantee": "exactly_twice"}, "spec.processingGuarantee must be one of"),
    ({"minReplicas": 4, "maxReplicas": 2}, "spec.minReplicas (4) must be <= spec.maxReplicas (2)"),
    ({"pulsar": None}, "spec.pulsar.pulsarConfig or spec.clusterRef.name is required"),
    ({"pulsar": {"pulsarConfig": "urls", "tlsConfig": {"enabled": True, "certSecretName": "ca"}}},
     "spec.pulsar.tlsConfig.certSecretKey is required with certSecretName"),
    ({"python": {"pyLocation": "function://public/exclamation@v1"}},
     "spec.python.pyLocation 'function://public/exclamation@v1' is not a package URL"),
    ({"python": {"pyLocation": "function://public/default/exclamation@v1@v2"}}, "is not a package URL"),
])
def test_an_invalid_function_is_reported_and_changes_nothing(example: Example, changes: dict[str, Any],
                                                             message: str) -> None:
    plan = reconcile(function(example, **changes))
    assert plan.objects == () and plan.deletions == ()
    degraded = condition(plan.status, "Degraded")
    assert degraded["reason"] == "InvalidSpec" and message in degraded["message"]


def test_the_report_keeps_its_transition_time_across_resyncs(example: Example) -> None:
    body = function(example)
    body["status"] = reconcile(body).status
    again = function_reconcile.reconcile(body, None, image=IMAGE, cluster_status=None, now=LATER).status
    assert condition(again, "Ready")["lastTransitionTime"] == NOW


def test_a_topic_pattern_alone_is_a_valid_input(example: Example) -> None:
    plan = reconcile(function(example, input={"topicPattern": "persistent://public/default/in-.*"}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config["topicsPattern"] == "persistent://public/default/in-.*" and config["inputs"] == []
    assert function_spec.validate(function(example, input={"topicPattern": "in-.*"})) == []


SECURED_PULSAR = {"pulsarConfig": "secured-urls", "authSecret": "fn-auth", "tlsSecret": "fn-tls",
                  "tlsConfig": {"enabled": True, "allowInsecure": False, "hostnameVerification": True,
                                "certSecretName": "pulsar-ca", "certSecretKey": "ca.crt"}}


def test_broker_credentials_and_tls_trust_come_from_mounted_secrets_never_the_command_line(
        example: Example) -> None:
    plan = reconcile(function(example, pulsar=SECURED_PULSAR))
    main = container(plan)
    assert main["command"][-10:] == [
        "--service-url", "$(brokerServiceURL)", "--client-auth-dir", "/pulsar/client-auth",
        "--client-tls-dir", "/pulsar/client-tls", "--tls-trust-certs-file", "/pulsar/client-tls-ca/ca.crt",
        "--tls-hostname-verification", "true"]
    pod = by_kind(plan, "StatefulSet")["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {"pulsar-auth": {"secretName": "fn-auth", "defaultMode": 0o400},
                       "pulsar-tls": {"secretName": "fn-tls", "defaultMode": 0o400},
                       "pulsar-tls-ca": {"secretName": "pulsar-ca", "defaultMode": 0o400}}
    mounts = {m["name"]: (m["mountPath"], m.get("readOnly")) for m in main["volumeMounts"]}
    assert mounts["pulsar-auth"] == ("/pulsar/client-auth", True)
    assert mounts["pulsar-tls-ca"] == ("/pulsar/client-tls-ca", True)
    assert not any("secretKeyRef" in str(e) for e in main["env"])  # credentials are files, not variables
    assert plan.status["ignoredFields"] is None
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_a_disabled_tls_config_mounts_nothing(example: Example) -> None:
    pulsar = {"pulsarConfig": "urls", "tlsConfig": {"enabled": False, "certSecretName": "ca",
                                                    "certSecretKey": "ca.crt"}}
    plan = reconcile(function(example, pulsar=pulsar))
    assert "--tls-trust-certs-file" not in container(plan)["command"]
    assert not any("secret" in v for v in by_kind(plan, "StatefulSet")["spec"]["template"]["spec"]["volumes"])

