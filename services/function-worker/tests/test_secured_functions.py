"""Functions on a secured cluster, as on Apache's: a standalone with token authentication and
authorization runs its embedded worker, whose instances authenticate to the broker with the
broker's own client credentials; the worker's REST API (through the broker's web port or its
own) decides on the client's role: superuser, tenant admin or the namespace's `functions`
permission. A separate `pulsar functions-worker` with the same settings shares the records
(etcd), so its own port is checked too."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import secrets
import stat
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common.auth import token as auth_token
from pulsar_common.etcd_server import EtcdServer
from pulsar_functions import testing
from pulsar_functions.testing import multipart, receive_all, wait_for

pytestmark = pytest.mark.slow

SUPERUSER = "admin"
#: The role the broker, the worker and the instances connect as.
BROKER_ROLE = "broker"
#: A proxy: it may name the client it forwards (X-Original-Principal).
PROXY_ROLE = "proxy"
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"

EXCLAIM = b"""
import pulsar


class Exclaim(pulsar.Function):
    def process(self, input, context):
        return input + "!"
"""


@dataclasses.dataclass
class SecuredCluster:
    standalone: broker_testing.StandaloneProcess
    worker: testing.WorkerProcess
    secret_key: bytes

    def token(self, role: str) -> str:
        return auth_token.create(self.secret_key, role)

    def http(self, method: str, url: str, body: bytes | None = None,
             content_type: str | None = None, role: str | None = None,
             original_principal: str | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": content_type} if content_type else {}
        if original_principal is not None:
            headers["X-Original-Principal"] = original_principal
        if role is not None:
            headers["Authorization"] = f"Bearer {self.token(role)}"
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return int(reply.status), bytes(reply.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), bytes(exc.read())

    def admin(self, method: str, path: str, document: Any = None) -> None:
        body = None if document is None else json.dumps(document).encode()
        status, reply = self.http(method, self.standalone.web_url + path, body,
                                  "application/json" if body else None, SUPERUSER)
        assert status < 300, (method, path, status, reply)

    def namespace(self, grants: dict[str, list[str]]) -> str:
        """A fresh tenant/ns with these namespace permissions."""
        tenant = f"t-{uuid.uuid4().hex[:8]}"
        self.admin("PUT", f"/admin/v2/tenants/{tenant}",
                   {"adminRoles": [], "allowedClusters": ["standalone"]})
        self.admin("PUT", f"/admin/v2/namespaces/{tenant}/ns")
        for role, actions in grants.items():
            self.admin("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/{role}", actions)
        return f"{tenant}/ns"

    def client(self, role: str) -> pulsar.Client:
        return pulsar.Client(self.standalone.service_url,
                             authentication=pulsar.AuthenticationToken(self.token(role)),
                             operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def security_settings(root: pathlib.Path, secret: bytes) -> dict[str, str]:
    (root / "secret.key").write_bytes(secret)
    (root / "broker.token").write_text(auth_token.create(secret, BROKER_ROLE))
    return {
        "authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": f"file://{root / 'secret.key'}",
        "authorizationEnabled": "true",
        "superUserRoles": f"{SUPERUSER},{BROKER_ROLE},{PROXY_ROLE}", "proxyRoles": PROXY_ROLE,
        "brokerClientAuthenticationPlugin": TOKEN_PLUGIN,
        "brokerClientAuthenticationParameters": f"file://{root / 'broker.token'}",
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    root = tmp_path_factory.mktemp("secured-functions")
    secret = secrets.token_bytes(32)
    settings = security_settings(root, secret)
    etcd = EtcdServer(root / "etcd")
    etcd.start()
    metadata_url = f"{etcd.url}/secured-{uuid.uuid4().hex[:8]}"
    standalone = broker_testing.StandaloneProcess(root / "data", {
        "journalSyncData": "false", "metadataStoreUrl": metadata_url, **settings})
    worker = testing.WorkerProcess(root / "worker", metadata_url, "", "")
    try:
        standalone.start()
        worker.overrides.update(settings)
        worker.overrides.update(pulsarServiceUrl=standalone.service_url,
                                pulsarWebServiceUrl=standalone.web_url)
        worker.start()
        yield SecuredCluster(standalone, worker, secret)
    finally:
        worker.stop()
        standalone.stop()
        etcd.stop()


def function_form(namespace: str, name: str) -> tuple[bytes, str]:
    document = {"className": "exclaim.Exclaim", "inputs": [f"{namespace}/in-{name}"],
                "output": f"{namespace}/out-{name}"}
    return multipart({"functionConfig": (None, json.dumps(document).encode()),
                      "data": ("exclaim.py", EXCLAIM)})


def test_a_role_with_the_functions_permission_runs_a_function_through_the_broker(
        cluster: SecuredCluster) -> None:
    namespace = cluster.namespace({"author": ["functions"]})
    name = f"exclaim-{uuid.uuid4().hex[:6]}"
    base = f"{cluster.standalone.web_url}/admin/v3/functions/{namespace}/{name}"
    status, reply = cluster.http("POST", base, *function_form(namespace, name), role="author")
    assert status == 204, reply

    def running() -> bool:
        status, reply = cluster.http("GET", f"{base}/status", role="author")
        return status == 200 and json.loads(reply)["numRunning"] == 1

    wait_for(running, 60, "the instance runs, authenticated to the broker")
    client = cluster.client(SUPERUSER)
    try:
        out = client.subscribe(f"persistent://{namespace}/out-{name}", "check")
        producer = client.create_producer(f"persistent://{namespace}/in-{name}")
        for word in ("hello", "world"):
            producer.send(word.encode())
        assert sorted(m.data() for m in receive_all(out, 2)) == [b"hello!", b"world!"]
    finally:
        client.close()
    conf_files = [path for path in (cluster.standalone.data_dir / "functions" / "client.conf",
                                    cluster.worker.work_dir / "functions" / "client.conf")
                  if path.exists()]
    assert conf_files, "the instance got its credentials from a client.conf"
    for path in conf_files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cluster.http("DELETE", base, role="author")[0] == 204


@pytest.mark.parametrize("role, expected", [(None, 401), ("stranger", 403),
                                            ("producer", 403)])
@pytest.mark.parametrize("port", ["broker", "worker"])
def test_a_create_without_credentials_or_rights_is_refused_and_creates_nothing(
        cluster: SecuredCluster, role: str | None, expected: int, port: str) -> None:
    namespace = cluster.namespace({"producer": ["produce", "consume"]})
    name = f"refused-{uuid.uuid4().hex[:6]}"
    web = cluster.standalone.web_url if port == "broker" else cluster.worker.url
    base = f"{web}/admin/v3/functions/{namespace}/{name}"
    status, reply = cluster.http("POST", base, *function_form(namespace, name), role=role)
    assert status == expected, reply
    assert cluster.http("GET", base, role=SUPERUSER)[0] == 404
    status, listed = cluster.http("GET", f"{cluster.worker.url}/admin/v3/functions/{namespace}",
                                  role=SUPERUSER)
    assert status == 200 and json.loads(listed) == []


def test_the_workers_cluster_routes_need_a_superuser(cluster: SecuredCluster) -> None:
    url = f"{cluster.worker.url}/admin/v2/worker/cluster"
    assert cluster.http("GET", url)[0] == 401
    assert cluster.http("GET", url, role="stranger")[0] == 403
    status, reply = cluster.http("GET", url, role=SUPERUSER)
    assert status == 200 and len(json.loads(reply)) == 2
    assert cluster.http("GET", f"{cluster.worker.url}/status.html")[0] == 200


def test_a_tenant_admin_may_manage_functions_of_its_tenant(cluster: SecuredCluster) -> None:
    namespace = cluster.namespace({})
    tenant = namespace.split("/")[0]
    cluster.admin("POST", f"/admin/v2/tenants/{tenant}",
                  {"adminRoles": ["boss"], "allowedClusters": ["standalone"]})
    url = f"{cluster.worker.url}/admin/v3/functions/{namespace}"
    assert cluster.http("GET", url, role="boss")[0] == 200
    assert cluster.http("GET", url, role="stranger")[0] == 403


def test_a_proxy_role_is_judged_with_the_client_it_names(cluster: SecuredCluster) -> None:
    namespace = cluster.namespace({"author": ["functions"]})
    url = f"{cluster.worker.url}/admin/v3/functions/{namespace}"
    assert cluster.http("GET", url, role=PROXY_ROLE, original_principal="author")[0] == 200
    assert cluster.http("GET", url, role=PROXY_ROLE, original_principal="stranger")[0] == 403
    # Anyone else naming a client is judged on its own role.
    assert cluster.http("GET", url, role="stranger", original_principal=SUPERUSER)[0] == 403


def pulsar_admin(cluster: SecuredCluster, role: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pulsar_client_tools.admin.main",
         "--admin-url", cluster.standalone.web_url, "--auth-plugin", TOKEN_PLUGIN,
         "--auth-params", f"token:{cluster.token(role)}", *args],
        capture_output=True, text=True, timeout=60, check=False)


def test_pulsar_admin_functions_create_with_a_token(cluster: SecuredCluster,
                                                    tmp_path: pathlib.Path) -> None:
    namespace = cluster.namespace({"author": ["functions"]})
    tenant, ns = namespace.split("/")
    (tmp_path / "exclaim.py").write_bytes(EXCLAIM)
    create = ("functions", "create", "--py", str(tmp_path / "exclaim.py"),
              "--classname", "exclaim.Exclaim", "--inputs", f"{namespace}/cli-in",
              "--output", f"{namespace}/cli-out", "--tenant", tenant, "--namespace", ns,
              "--name", "cli")
    refused = pulsar_admin(cluster, "stranger", *create)
    assert refused.returncode != 0 and "not authorized" in refused.stderr
    created = pulsar_admin(cluster, "author", *create)
    assert created.returncode == 0, (created.stdout, created.stderr)
    listed = pulsar_admin(cluster, "author", "functions", "list", "--tenant", tenant,
                          "--namespace", ns)
    assert listed.returncode == 0 and "cli" in listed.stdout.split()
    deleted = pulsar_admin(cluster, "author", "functions", "delete", "--tenant", tenant,
                           "--namespace", ns, "--name", "cli")
    assert deleted.returncode == 0, (deleted.stdout, deleted.stderr)
