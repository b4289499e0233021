"""A single active operator through a Lease: the pure rule, the elector, and real processes."""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest
import pytest_asyncio
import yaml
from pulsar_common.testing import free_port
from pulsar_operator import emulation, kube, leader
from pulsar_operator.leader import Decision, LeaseRecord
from pulsar_operator.plan import ObjectRef

from .conftest import EXAMPLES

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
LEASE = ObjectRef("coordination.k8s.io/v1", "Lease", "default", "pulsar-operator")


@pytest.mark.parametrize(("record", "identity", "now", "decision"), [
    (None, "a", T0, Decision.ACQUIRE),
    (LeaseRecord(None, None, 15, 0), "a", T0, Decision.ACQUIRE),
    (LeaseRecord("a", T0, 15, 0), "a", T0 + datetime.timedelta(seconds=5), Decision.RENEW),
    (LeaseRecord("a", T0, 15, 0), "b", T0 + datetime.timedelta(seconds=5), Decision.WAIT),
    (LeaseRecord("a", T0, 15, 0), "b", T0 + datetime.timedelta(seconds=15), Decision.WAIT),
    (LeaseRecord("a", T0, 15, 0), "b", T0 + datetime.timedelta(seconds=16), Decision.ACQUIRE),
    (LeaseRecord("a", None, 15, 0), "b", T0, Decision.ACQUIRE),
])
def test_a_lease_is_taken_when_free_or_expired_and_renewed_by_its_holder(
    record: LeaseRecord | None, identity: str, now: datetime.datetime, decision: Decision
) -> None:
    assert leader.decide(record, identity, now) is decision


def test_lease_times_round_trip_in_micro_time_format() -> None:
    text = leader.format_time(T0)
    assert text == "2026-01-01T00:00:00.000000Z" and leader.parse_time(text) == T0


@pytest_asyncio.fixture
async def client() -> AsyncIterator[tuple[kube.KubeClient, str]]:
    async with emulation.running_emulator() as (_, url):
        api = kube.KubeClient(kopf.ConnectionInfo(server=url, token="emulator"))
        try:
            yield api, url
        finally:
            await api.close()


async def test_one_elector_holds_the_lease_until_it_stops_renewing(client: tuple[kube.KubeClient, str]) -> None:
    api, _ = client
    first = leader.LeaderElector(api, "default", "pulsar-operator", "first", duration_s=1, retry_s=0.05)
    second = leader.LeaderElector(api, "default", "pulsar-operator", "second", duration_s=1, retry_s=0.05)
    assert await first.try_once()
    assert not await second.try_once()
    assert await first.try_once()  # renewal
    lease = await api.get(LEASE)
    assert lease is not None and lease["spec"]["holderIdentity"] == "first"
    # `first` stops renewing; `second` gets the lease once it expired.
    await second.acquire()
    lease = await api.get(LEASE)
    assert lease is not None and lease["spec"]["holderIdentity"] == "second"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not await first.try_once()


def operator(kubeconfig: Any, log: Any) -> emulation.OperatorProcess:
    """Namespace-scoped, as the operator chart runs it by default; the Lease goes to that namespace."""
    return emulation.OperatorProcess(kubeconfig, free_port(), "--namespace", "default",
                                     "--lease-duration", "2", "--resync-interval", "5", log=log)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which(emulation.KUBECTL), reason="kubectl is not installed")
async def test_a_standby_operator_takes_over_when_the_leader_is_killed(tmp_path: Any) -> None:
    async with emulation.running_emulator() as (_, url):
        kubeconfig = emulation.write_kubeconfig(tmp_path / "kubeconfig", url)
        await emulation.kubectl(kubeconfig, "apply", "--validate=false", "-f", str(emulation.CRD_DIR))
        api = kube.KubeClient(kopf.ConnectionInfo(server=url, token="emulator"))
        first, second = operator(kubeconfig, tmp_path / "first.log"), operator(kubeconfig, tmp_path / "second.log")
        try:
            await first.start()
            await emulation.wait_for(first.healthy, 30, "first operator healthy")

            async def holder() -> str | None:
                lease = await api.get(LEASE)
                return (lease or {}).get("spec", {}).get("holderIdentity")

            assert first.proc is not None and second.proc is None
            first_id = f"{socket.gethostname()}-{first.proc.pid}"
            await emulation.wait_for(lambda: _is(holder(), first_id), 30, "first holds the lease")
            await second.start()
            await emulation.wait_for(second.healthy, 30, "standby answers /healthz")
            assert await holder() == first_id
            os.kill(first.proc.pid, signal.SIGKILL)
            await first.proc.wait()
            assert second.proc is not None
            second_id = f"{socket.gethostname()}-{second.proc.pid}"
            await emulation.wait_for(lambda: _is(holder(), second_id), 30, "second takes the lease")
            # The new leader reconciles: a cluster applied now gets its StatefulSets.
            doc = yaml.safe_load((EXAMPLES / "pulsar-cluster.yaml").read_text())
            await emulation.kubectl(kubeconfig, "apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump(doc))

            async def has_brokers() -> bool:
                return await api.get(ObjectRef("apps/v1", "StatefulSet", "default", "pulsar-mini-broker")) is not None

            await emulation.wait_for(has_brokers, 30, "the new leader reconciles")
        finally:
            await first.stop()
            await second.stop()
            await api.close()


async def _is(value: Any, expected: str) -> bool:
    return bool(await value == expected)
