"""The kubelet harness's pure parts: $(VAR) expansion and env, the StatefulSet plan, the
cluster's name table, probe thresholds, and the namespace wrapper of a container."""

from __future__ import annotations

import base64
import os
import pathlib
from typing import Any

import pytest
from pulsar_operator.kubelet_emulation import containers, network, podspec, probes, statefulsets, volumes

POD: dict[str, Any] = {
    "metadata": {"name": "b-0", "namespace": "ns", "uid": "u1", "labels": {"app": "b"}},
    "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
}
OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("ConfigMap", "ns", "urls"): {"data": {"webServiceURL": "http://w:8080", "bad key": "x"}},
    ("Secret", "ns", "token"): {"data": {"token": base64.b64encode(b"s3cret").decode()}},
}


def lookup(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((kind, namespace, name))


@pytest.mark.parametrize(("text", "expected"), [
    ("--bind=$(POD_IP)", "--bind=127.77.0.9"),
    ("$(POD_NAME).svc:$(PORT)", "b-0.svc:6650"),
    ("$(UNDEFINED) stays", "$(UNDEFINED) stays"),
    ("$$(POD_IP) is escaped", "$(POD_IP) is escaped"),
    ("a $ alone, $x and $( unclosed", "a $ alone, $x and $( unclosed"),
    ("$$$(PORT)", "$6650"),
])
def test_command_lines_expand_variables_as_kubernetes_does(text: str, expected: str) -> None:
    assert podspec.expand(text, {"POD_IP": "127.77.0.9", "POD_NAME": "b-0", "PORT": "6650"}) == expected


def test_env_comes_from_the_downward_api_config_maps_and_secrets_in_order() -> None:
    container = {
        "envFrom": [{"configMapRef": {"name": "urls"}, "prefix": "P_"}],
        "env": [
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "URL", "value": "http://$(POD_IP):8080/$(LATER)"},
            {"name": "LATER", "value": "x"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "token"}}},
            {"name": "MAYBE", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k", "optional": True}}},
        ],
    }
    env = podspec.environment(container, POD, "127.77.0.9", lookup)
    assert env == {"P_webServiceURL": "http://w:8080", "POD_IP": "127.77.0.9", "APP": "b",
                   "URL": "http://127.77.0.9:8080/$(LATER)", "LATER": "x", "TOKEN": "s3cret"}


@pytest.mark.parametrize("source", [
    {"configMapKeyRef": {"name": "urls", "key": "missing"}},
    {"secretKeyRef": {"name": "nope", "key": "token"}},
    {"fieldRef": {"fieldPath": "status.phase"}},
])
def test_a_missing_reference_keeps_the_container_from_starting(source: dict[str, Any]) -> None:
    with pytest.raises(podspec.ConfigError):
        podspec.environment({"env": [{"name": "X", "valueFrom": source}]}, POD, "127.77.0.9", lookup)


def test_argv_is_command_then_args_and_a_command_is_required() -> None:
    assert podspec.argv({"command": ["pulsar", "broker"], "args": ["--conf", "bindAddress=$(IP)"]},
                        {"IP": "127.77.0.3"}) == ["pulsar", "broker", "--conf", "bindAddress=127.77.0.3"]
    with pytest.raises(podspec.ConfigError, match="no command"):
        podspec.argv({"name": "c", "args": ["x"]}, {})


def test_ports_are_numbers_or_container_port_names() -> None:
    assert podspec.port_number(POD, 8000) == podspec.port_number(POD, "8000") == 8000
    assert podspec.port_number(POD, "http") == 8080
    with pytest.raises(podspec.ConfigError):
        podspec.port_number(POD, "grpc")


def views(*specs: str, rev: str = "r2") -> dict[int, statefulsets.PodView]:
    """'R' ready, 'N' not ready, 'T' terminating, 'O' ready but outdated, '-' missing."""
    result = {}
    for ordinal, spec in enumerate(specs):
        if spec != "-":
            result[ordinal] = statefulsets.PodView(revision="r1" if spec == "O" else rev, ready=spec in "RO",
                                                   terminating=spec == "T")
    return result


@pytest.mark.parametrize(("replicas", "parallel", "pods", "create", "delete"), [
    (3, False, views(), (0,), ()),                        # ordered: one at a time
    (3, False, views("N"), (), ()),                       # ... waiting for it to be ready
    (3, False, views("R", "R"), (2,), ()),
    (3, False, views("R", "-", "R"), (1,), ()),           # a lost pod is recreated first
    (3, True, views(), (0, 1, 2), ()),                    # parallel: all at once
    (3, True, views("N", "-", "-"), (1, 2), ()),
    (1, False, views("R", "R", "R"), (), (2,)),           # scale down from the top, one at a time
    (1, False, views("R", "R", "T"), (), ()),             # ... waiting for it to be gone
    (1, False, views("N", "R", "R"), (), ()),             # ... and while a kept pod is unhealthy
    (1, True, views("R", "R", "R"), (), (2, 1)),
    (2, False, views("R", "T"), (), ()),                  # a terminating pod holds its name
    (2, False, views("O", "O"), (), (1,)),                # rolling update from the highest ordinal
    (2, False, views("O", "N"), (), ()),                  # ... waiting for the replacement
    (2, False, views("O", "R"), (), (0,)),
    (2, False, views("R", "R"), (), ()),
])
def test_statefulset_plan(replicas: int, parallel: bool, pods: dict[int, statefulsets.PodView],
                          create: tuple[int, ...], delete: tuple[int, ...]) -> None:
    assert statefulsets.plan(replicas, parallel, True, 0, "r2", pods) == statefulsets.Decision(create, delete)


def test_rolling_update_stops_at_the_partition_and_on_delete_does_nothing() -> None:
    assert statefulsets.plan(3, False, True, 1, "r2", views("O", "O", "R")).delete == (1,)
    assert statefulsets.plan(3, False, True, 1, "r2", views("O", "R", "R")) == statefulsets.Decision()
    assert statefulsets.plan(3, False, False, 0, "r2", views("O", "O", "O")) == statefulsets.Decision()


def test_pods_of_a_statefulset_get_stable_names_hostnames_and_their_claims() -> None:
    sts = {"metadata": {"name": "db", "namespace": "ns", "uid": "s1"}, "spec": {
        "serviceName": "db-headless", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}},
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}
    pod = statefulsets.pod_body(sts, 2, "db-abc")
    assert pod["metadata"]["name"] == "db-2"
    assert pod["metadata"]["labels"] == {"app": "db", "controller-revision-hash": "db-abc",
                                         "statefulset.kubernetes.io/pod-name": "db-2",
                                         "apps.kubernetes.io/pod-index": "2"}
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("db-2", "db-headless")
    assert pod["spec"]["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-2"}}]
    claim = statefulsets.claim_body(sts, sts["spec"]["volumeClaimTemplates"][0], 2)
    assert claim["metadata"]["name"] == "data-db-2"
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "s1"
    assert statefulsets.revision(sts) == statefulsets.revision(dict(sts)) != statefulsets.revision(
        {**sts, "spec": {**sts["spec"], "template": {"metadata": {"annotations": {"x": "1"}}}}})


def pod(name: str, ip: str | None, ready: bool, labels: dict[str, str] | None = None,
        subdomain: str | None = "db-headless") -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    status = {"phase": "Running", "conditions": conditions, **({"podIP": ip} if ip else {})}
    return {"metadata": {"name": name, "namespace": "ns", "labels": labels or {"app": "db"}},
            "spec": {"hostname": name, "subdomain": subdomain}, "status": status}


def service(name: str, headless: bool, publish_not_ready: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"app": "db"}, "ports": [{"port": 80, "targetPort": 8080}]}
    if headless:
        spec["clusterIP"] = "None"
    spec["publishNotReadyAddresses"] = publish_not_ready
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_the_name_table_has_services_headless_endpoints_and_pod_names() -> None:
    pods = [pod("db-0", "127.77.0.1", True), pod("db-1", "127.77.0.2", False), pod("db-2", None, False),
            pod("other", "127.77.0.9", True, labels={"app": "other"}, subdomain=None)]
    table = set(network.name_table([service("db", False), service("db-headless", True)], pods,
                                   {("ns", "db"): "127.78.0.1"}))
    assert {("127.78.0.1", "db.ns.svc.cluster.local"), ("127.78.0.1", "db.ns.svc"), ("127.78.0.1", "db.ns")} <= table
    assert ("127.77.0.1", "db-headless.ns.svc") in table
    assert ("127.77.0.1", "db-0.db-headless.ns.svc.cluster.local") in table
    assert ("127.77.0.2", "db-1.db-headless.ns.svc") not in table  # not ready, not published
    assert ("127.77.0.2", "db-1") in table and ("127.77.0.9", "other") in table
    published = set(network.name_table([service("db-headless", True, publish_not_ready=True)], pods, {}))
    assert ("127.77.0.2", "db-1.db-headless.ns.svc") in published
    text = network.render_hosts(sorted(table))
    assert text.startswith("127.0.0.1\tlocalhost\n") and "127.78.0.1\tdb.ns.svc\n" in text


def test_the_hosts_file_is_rewritten_in_place(tmp_path: pathlib.Path) -> None:
    hosts = network.HostsFile(tmp_path / "hosts")
    inode = (tmp_path / "hosts").stat().st_ino
    assert hosts.write(network.render_hosts([("127.77.0.1", "a-long-name.ns.svc")]))
    assert hosts.write(network.render_hosts([]))
    assert not hosts.write(network.render_hosts([]))
    assert (tmp_path / "hosts").stat().st_ino == inode
    assert (tmp_path / "hosts").read_text() == network.render_hosts([])


def test_endpoints_skip_terminating_pods_and_resolve_named_target_ports() -> None:
    terminating = pod("db-1", "127.77.0.2", True)
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    members = network.endpoints(service("db", False), [pod("db-0", "127.77.0.1", True), terminating])
    assert members == [network.Endpoint("db-0", "127.77.0.1", True)]
    assert network.target_port({"port": 80, "targetPort": "http"}, POD) == 8080


@pytest.mark.parametrize(("initially_ok", "results", "flips"), [
    (False, [True], [True]),                                   # readiness: one success
    (False, [False, False, True, False, False, False], [True, False]),
    (True, [False, False, True, False, False], []),            # failures must be consecutive
    (True, [False, False, False], [False]),                    # liveness: three in a row
])
def test_probe_verdicts_follow_the_thresholds(initially_ok: bool, results: list[bool], flips: list[bool]) -> None:
    verdict = probes.Verdict(probes.Schedule.of({"failureThreshold": 3}), initially_ok)
    seen = [verdict.ok for success in results if verdict.record(success)]
    assert seen == flips


def test_a_container_runs_in_its_own_namespaces_with_the_cluster_names_and_its_mounts(tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    mounts = [volumes.Mount(conf, "/pulsar/conf", True), volumes.Mount(tmp_path / "data", "/pulsar/data", False)]
    argv = containers.namespace_argv(tmp_path / "hosts", mounts, "b-0", ["pulsar", "broker"], "/work dir")
    assert argv[:5] == ["unshare", "--mount", "--uts", "--", "/bin/sh"]
    assert argv[-3:] == ["container", "pulsar", "broker"]
    script = argv[6]
    assert f"mount --bind {tmp_path}/hosts /etc/hosts" in script
    assert f"mount --bind {conf} /pulsar/conf\nmount -o remount,bind,ro /pulsar/conf" in script
    assert "hostname b-0" in script and "cd '/work dir'" in script and script.endswith('exec "$@"')


#: A raw HMAC key as `pulsar tokens create-secret-key` writes it: bytes that are not UTF-8.
BINARY_KEY = bytes(range(256))


def test_secret_and_binary_config_map_volumes_hold_the_exact_bytes(tmp_path: pathlib.Path) -> None:
    objects = {
        ("Secret", "ns", "key"): {"data": {"secret.key": base64.b64encode(BINARY_KEY).decode()},
                                  "stringData": {"role": "operator"}},
        ("ConfigMap", "ns", "conf"): {"data": {"a.conf": "x=1\n"},
                                      "binaryData": {"blob": base64.b64encode(b"\x00\xff\xfe").decode()}},
    }
    pod = {"metadata": {"name": "b-0", "namespace": "ns"}, "spec": {"volumes": [
        {"name": "key", "secret": {"secretName": "key", "defaultMode": 0o400}},
        {"name": "conf", "configMap": {"name": "conf", "items": [{"key": "blob", "path": "sub/blob"}]}},
    ]}}
    pod_volumes = volumes.PodVolumes(pod, tmp_path, volumes.ClaimStore(tmp_path / "claims"),
                                     lambda kind, ns, name: objects.get((kind, ns, name)))
    pod_volumes.prepare()
    key_dir, conf_dir = pod_volumes.paths["key"], pod_volumes.paths["conf"]
    assert (key_dir / "secret.key").read_bytes() == BINARY_KEY
    assert (key_dir / "secret.key").stat().st_mode & 0o777 == 0o400
    assert (key_dir / "role").read_bytes() == b"operator"
    assert (conf_dir / "sub" / "blob").read_bytes() == b"\x00\xff\xfe"
    assert not (conf_dir / "a.conf").exists()


def test_a_binary_secret_in_the_environment_reaches_the_process_as_the_same_bytes() -> None:
    secret = {"data": {"key": base64.b64encode(BINARY_KEY[1:]).decode()}}  # no NUL in an environment
    container = {"env": [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "key", "key": "key"}}}],
                 "envFrom": [{"configMapRef": {"name": "conf"}}]}
    objects = {("Secret", "ns", "key"): secret,
               ("ConfigMap", "ns", "conf"): {"data": {"TEXT": "t"}, "binaryData": {"BLOB": "AAE="}}}
    env = podspec.environment(container, POD, "127.77.0.9", lambda kind, ns, name: objects.get((kind, ns, name)))
    assert os.fsencode(env["KEY"]) == BINARY_KEY[1:]
    assert env["TEXT"] == "t" and "BLOB" not in env  # env reads a ConfigMap's data only, as the kubelet


def test_harnesses_side_by_side_take_different_address_blocks(tmp_path: pathlib.Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network, "LOCK_DIR", tmp_path)
    first = network.AddressBlock("127.77.0.0/16", "127.78.0.0/16", block_size=16384)
    second = network.AddressBlock("127.77.0.0/16", "127.78.0.0/16", block_size=16384)
    ours = {first.pods.allocate() for _ in range(5)}
    theirs = {second.pods.allocate() for _ in range(5)}
    assert not ours & theirs
    assert all(a.startswith("127.77.") for a in ours | theirs)
    assert second.services.allocate().startswith("127.78.")
    rest = [network.AddressBlock("127.77.0.0/16", "127.78.0.0/16", block_size=16384) for _ in range(2)]
    with pytest.raises(RuntimeError, match="taken"):
        network.AddressBlock("127.77.0.0/16", "127.78.0.0/16", block_size=16384)
    first.release()
    rest.append(network.AddressBlock("127.77.0.0/16", "127.78.0.0/16", block_size=16384))
    for block in [second, *rest]:
        block.release()


def test_an_address_pool_skips_the_ends_of_its_block() -> None:
    pool = network.AddressPool("127.77.0.0/16", start=0, count=4)
    assert [pool.allocate(), pool.allocate()] == ["127.77.0.1", "127.77.0.2"]
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.allocate()
