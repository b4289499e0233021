"""`pulsar-admin namespaces|topics grant-permission|revoke-permission|permissions` against
the secured standalone, authenticated with a token as Apache's CLI is (--auth-plugin,
--auth-params)."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pulsar
import pytest
from pulsar_client_tools.admin import main

TOKEN_PLUGIN = "org.apache.pulsar.client.impl.auth.AuthenticationToken"


@dataclasses.dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def admin(capsys: pytest.CaptureFixture[str]):
    """Runs pulsar-admin's own entry point in this process as a role."""

    def run(secured, role: str, *args: str) -> Ran:
        capsys.readouterr()
        code = main.main(["--admin-url", secured.process.web_url, "--auth-plugin", TOKEN_PLUGIN,
                          "--auth-params", f"token:{secured.token(role)}", *args])
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return run


def test_grant_list_and_revoke_from_the_cli(secured, admin) -> None:
    tenant = secured.tenant(admins=("ops",))
    ns, topic = f"{tenant}/ns", f"persistent://{tenant}/ns/t-{uuid.uuid4().hex[:8]}"
    done = admin(secured, "ops", "namespaces", "grant-permission", ns, "--role", "app",
                 "--actions", "produce,consume")
    assert done.returncode == 0, done.stderr
    done = admin(secured, "ops", "topics", "grant-permission", topic, "--role", "auditor",
                 "--actions", "consume")
    assert done.returncode == 0, done.stderr
    shown = admin(secured, "ops", "namespaces", "permissions", ns)
    assert json.loads(shown.stdout) == {"app": ["produce", "consume"]}
    shown = admin(secured, "ops", "topics", "permissions", topic)
    assert json.loads(shown.stdout) == {"app": ["produce", "consume"], "auditor": ["consume"]}
    client = secured.client("auditor")
    try:
        client.subscribe(topic, "audit")
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(topic)
    finally:
        client.close()
    assert admin(secured, "ops", "topics", "revoke-permission", topic,
                 "--role", "auditor").returncode == 0
    assert admin(secured, "ops", "namespaces", "revoke-permission", ns,
                 "--role", "app").returncode == 0
    assert json.loads(admin(secured, "ops", "namespaces", "permissions", ns).stdout) == {}
    refused = admin(secured, "app", "namespaces", "grant-permission", ns, "--role", "app",
                    "--actions", "produce")
    assert refused.returncode != 0 and "permission" in (refused.stderr + refused.stdout)
    bad = admin(secured, "ops", "namespaces", "grant-permission", ns, "--role", "x",
                "--actions", "fly")
    assert bad.returncode != 0
