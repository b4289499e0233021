"""e2e: a functions worker in a secured PulsarCluster, on the operator's live cluster.

The cluster has spec.tls (a certificate for the brokers' Service name) and
spec.auth (token authentication and authorization) and spec.functionsWorker;
the test makes its Secrets as a user would (a token key, the operator's token,
the certificate). `pulsar-admin functions create` with a superuser token
through the brokers' Service reaches the worker pod; the worker's instance
reaches the brokers over TLS with the operator's token (a mounted file) and
transforms what a token client publishes; without a token the call is refused.
Then a function-mesh Function resource on the same cluster: its instance pod
gets its own role's token from pulsar.authSecret and trusts the brokers by
pulsar.tlsConfig's CA (both mounted Secrets) and connects over pulsar+ssl://.
Last, that Function's code becomes a package of the brokers' packages management
(function://..., uploaded by the superuser): its instance downloads it over HTTPS
from the ConfigMap's webServiceURL with the same token and CA, once its role has
the namespace's `packages` permission.
"""

from __future__ import annotations

import base64
import json
import pathlib
import secrets
import sys
from collections.abc import AsyncIterator
from typing import Any

import pulsar_functions.examples.exclamation_function as example_function
import pytest
import pytest_asyncio
from pulsar_common import testing_certs
from pulsar_common.auth import token as auth_token
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api

from e2e import operator_live
from e2e.operator_live import CLUSTERS, MESH_FUNCTIONS, NS, PULSAR_ADMIN, READY_TIMEOUT_S, is_ready

pytestmark = operator_live.MARKS
CLUSTER = "secure-mini"
WAIT_S = 90.0
TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"
BROKERS = f"{CLUSTER}-broker.{NS}.svc"
CLUSTER_SPEC = operator_live.packages_cluster(
    CLUSTER, functionsWorker={"enabled": True}, tls={"secretName": "secure-tls"},
    auth={"enabled": True, "tokenSecretKey": {"name": "token-key"}, "superUserRoles": ["operator"],
          "operatorToken": {"name": "operator-token"}})
#: Publishes to the function's input and reads its output, authenticated with a token.
THROUGH_FUNCTION = """
import sys, pulsar
url, token, source, sink = sys.argv[1:5]
client = pulsar.Client(url, authentication=pulsar.AuthenticationToken(token), operation_timeout_seconds=45)
consumer = client.subscribe(sink, "e2e-check", initial_position=pulsar.InitialPosition.Earliest)
client.create_producer(source).send(b"secured")
message = consumer.receive(timeout_millis=60000)
client.close()
print("THROUGH " + message.data().decode())
"""


def secret(name: str, data: dict[str, bytes]) -> str:
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    return json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                       "type": "Opaque", "data": encoded})


class Secured(operator_live.Live):
    key: bytes = b""

    def token(self, role: str) -> str:
        return auth_token.create(self.key, role)

    async def admin(self, *args: str, token: str | None = None, group: str = "functions") -> tuple[int, str]:
        auth = [] if token is None else ["--auth-plugin", TOKEN_PLUGIN, "--auth-params", f"token:{token}"]
        result = await self.cluster.run([PULSAR_ADMIN, "--admin-url", f"http://{BROKERS}:8080", *auth,
                                         group, *args], timeout_s=90)
        return result.returncode, result.stdout + result.stderr

    async def through(self, token: str, source: str, sink: str) -> str:
        result = await self.cluster.run([sys.executable, "-c", THROUGH_FUNCTION, f"pulsar://{BROKERS}:6650",
                                         token, source, sink], timeout_s=150)
        return result.stdout + result.stderr


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[Secured]:
    state = tmp_path_factory.mktemp("live-secured-functions")
    async with operator_live.started(Secured, state, request) as found:
        # A raw HMAC key, as `pulsar tokens create-secret-key` makes it: random bytes, not
        # UTF-8, which the mounted Secret file must hold unchanged for brokers and workers.
        found.key = secrets.token_bytes(32)
        # The brokers' Service and their pods' names (clients reach the owner of a topic by the
        # address it advertises, its pod's DNS name), as a cert-manager Certificate would list.
        pki = testing_certs.make_pki(state / "certs", hosts=(
            BROKERS, f"*.{CLUSTER}-broker-headless.{NS}.svc", "localhost", "127.0.0.1"))
        await found.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
        for name, data in (
                ("token-key", {"secret.key": found.key}),
                ("operator-token", {"token": found.token("operator").encode()}),
                ("secure-tls", {"tls.crt": pki.server.cert.read_bytes(), "tls.key": pki.server.key.read_bytes(),
                                "ca.crt": pki.trust_file.read_bytes()})):
            await found.kubectl("apply", "--validate=false", "-f", "-", stdin=secret(name, data))
        yield found


def ready_with_worker(obj: dict[str, Any]) -> bool:
    worker = ((obj.get("status") or {}).get("components") or {}).get("functionsWorker") or {}
    return is_ready(obj) and worker.get("readyReplicas") == 1


async def test_a_secured_cluster_with_a_functions_worker_becomes_ready(live: Secured) -> None:
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=CLUSTER_SPEC)
    cluster = await live.wait(CLUSTERS, CLUSTER, ready_with_worker,
                              "secured PulsarCluster Ready with its functions worker", READY_TIMEOUT_S)
    assert cluster["status"]["metadataInitialized"] is True  # the operator's token and CA worked


async def test_functions_created_with_a_token_run_and_reach_brokers_over_tls(live: Secured) -> None:
    refused, output = await live.admin("list")
    assert refused == 1 and ("401" in output or "uthenticat" in output), output
    superuser = live.token("operator")
    source, sink = "persistent://public/default/secure-in", "persistent://public/default/secure-out"
    status, output = await live.admin("create", "--py", str(example_function.__file__),
                                      "--classname", "exclamation_function.ExclamationFunction",
                                      "--inputs", source, "--output", sink, "--name", "secured",
                                      token=superuser)
    assert status == 0 and "Created successfully" in output, output

    async def running() -> bool:
        code, text = await live.admin("status", "--name", "secured", token=superuser)
        return code == 0 and json.loads(text).get("numRunning") == 1

    await emulation.wait_for(running, WAIT_S, "the instance runs on the worker pod")
    output = await live.through(superuser, source, sink)
    assert "THROUGH secured!" in output, output[-3000:]
    conf = await live.api.get(api.CONFIG_MAPS, NS, f"{CLUSTER}-functions-worker")
    assert conf is not None
    assert f"pulsarServiceUrl=pulsar+ssl://{BROKERS}:6651" in conf["data"]["functions_worker.conf"]
    status, output = await live.admin("delete", "--name", "secured", token=superuser)
    assert status == 0, output


FUNCTION_RESOURCE = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: secure-urls
data:
  webServiceURL: https://{BROKERS}:8443
  brokerServiceURL: pulsar+ssl://{BROKERS}:6651
---
apiVersion: compute.functionmesh.io/v1alpha1
kind: Function
metadata:
  name: secured-exclamation
spec:
  className: pulsar_functions.examples.exclamation_function.ExclamationFunction
  replicas: 1
  input:
    topics: [persistent://public/default/cr-in]
  output:
    topic: persistent://public/default/cr-out
  python: {{}}
  pulsar:
    pulsarConfig: secure-urls
    authSecret: fn-auth
    tlsConfig: {{enabled: true, certSecretName: secure-tls, certSecretKey: ca.crt, hostnameVerification: true}}
"""


async def test_a_function_resource_connects_with_its_mounted_token_and_ca(live: Secured) -> None:
    superuser = live.token("operator")
    status, output = await live.admin("grant-permission", "public/default", "--role", "fn-runner",
                                      "--actions", "produce,consume", token=superuser, group="namespaces")
    assert status == 0, output
    runner_token = live.token("fn-runner")
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=secret("fn-auth", {
        "clientAuthenticationPlugin": TOKEN_PLUGIN.encode(),
        "clientAuthenticationParameters": f"token:{runner_token}".encode()}))
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=FUNCTION_RESOURCE)

    def ready(obj: dict[str, Any]) -> bool:
        return is_ready(obj) and (obj.get("status") or {}).get("readyReplicas") == 1

    function = await live.wait(MESH_FUNCTIONS, "secured-exclamation", ready, "the Function's instance ready")
    assert "ignoredFields" not in function["status"]
    sts = await live.api.get(api.STATEFUL_SETS, NS, "secured-exclamation-function")
    assert sts is not None
    assert runner_token not in json.dumps(sts)  # only the Secret's name is in the pod template
    output = await live.through(superuser, "persistent://public/default/cr-in",
                                "persistent://public/default/cr-out")
    assert "THROUGH secured!" in output, output[-3000:]


PACKAGE = "function://public/default/secured-question@v1"


async def test_a_function_resource_downloads_its_package_with_its_mounted_token_and_ca(
        live: Secured, tmp_path: pathlib.Path) -> None:
    superuser = live.token("operator")
    code = tmp_path / "question.py"
    code.write_text("import pulsar\n\n\nclass Question(pulsar.Function):\n"
                    "    def process(self, input, context):\n        return input + '?'\n")
    status, output = await live.admin("upload", PACKAGE, "--path", str(code), "--description", "asks",
                                      token=superuser, group="packages")
    assert status == 0, output
    status, output = await live.admin("grant-permission", "public/default", "--role", "fn-runner",
                                      "--actions", "produce,consume,packages", token=superuser, group="namespaces")
    assert status == 0, output
    # New topics too: the check's subscription on cr-out still holds the earlier "secured!".
    source, sink = "persistent://public/default/pkg-in", "persistent://public/default/pkg-out"
    pod = "secured-exclamation-function-0"
    old_uid = ((await live.api.get(api.PODS, NS, pod) or {}).get("metadata") or {}).get("uid")
    await live.kubectl("patch", "functions.compute.functionmesh.io/secured-exclamation", "--type=merge", "-p",
                       json.dumps({"spec": {"className": "question.Question", "python": {"pyLocation": PACKAGE},
                                            "input": {"topics": [source]}, "output": {"topic": sink}}}))

    async def rolled() -> bool:
        """A new instance pod, ready: subscribed to the new input (it starts at the latest message)."""
        found = await live.api.get(api.PODS, NS, pod) or {}
        statuses = (found.get("status") or {}).get("containerStatuses") or [{}]
        return found.get("metadata", {}).get("uid") not in (None, old_uid) and bool(statuses[0].get("ready"))

    await emulation.wait_for(rolled, WAIT_S, "a new instance pod ready with the package")
    conf = await live.api.get(api.CONFIG_MAPS, NS, "secured-exclamation-function")
    assert json.loads((conf or {})["data"]["function.json"])["webServiceUrl"] == f"https://{BROKERS}:8443"
    output = await live.through(superuser, source, sink)
    assert "THROUGH secured?" in output, output[-3000:]
