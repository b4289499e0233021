"""e2e: the operator's bookie loops on a running cluster (kubelet harness, real processes).

One PulsarCluster (1 etcd, 4 bookies, 1 broker writing E=3 WQ=2 AQ=2, no proxy) serves
the module; the tests run in order, as an operator of the cluster would live them:

- lose a bookie with its disk (its pod killed, its volumes emptied): the auditor and replication
  workers bring every ledger back to its write quorum on the three others, the operator
  forgets the lost bookie's cookie and the pod comes back as a new, empty bookie;
- roll the bookies (a config change): recovery is paused (lostBookieRecoveryDelay raised)
  before the first pod restarts and restored after, and nothing is re-replicated;
- grow the managed etcd from 1 to 3 members and back to 1, one member at a time, the
  cluster serving after each;
- lower spec.bookkeeper.replicas 4 -> 3 while a producer keeps sending, SIGKILL the
  operator in the middle of the decommission and start it again: bookie 3 is drained
  before its pod goes, nothing is under-replicated when it goes, and every acknowledged
  message is still there.

Each decision shows as an Event on the PulsarCluster and in its status. The times are
printed (`-s`) and recorded in docs/operator.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api

from e2e import operator_live
from e2e.operator_live import CLUSTERS, GROUP, NS, READY_TIMEOUT_S, condition, is_ready

pytestmark = operator_live.MARKS
CLUSTER = "loops"
EVENTS = api.Resource("v1", "events", "Event")
LOOP_TIMEOUT_S = 90.0
#: Detection (lostBookieRecoveryDelay, the auditor), copies, then the loop's forget: slower on a busy machine.
RECOVERY_TIMEOUT_S = 150.0
TOPIC = "persistent://public/default/steady"
BOOKIE_ID = "{cluster}-bookie-{i}.{cluster}-bookie.{ns}.svc:3181"
SPEC: dict[str, Any] = {
    "apiVersion": GROUP, "kind": "PulsarCluster", "metadata": {"name": CLUSTER, "namespace": NS},
    "spec": {
        "etcd": {"replicas": 1},
        "bookkeeper": {"replicas": 4},
        "broker": {"replicas": 1, "config": {
            "managedLedgerDefaultEnsembleSize": "3", "managedLedgerDefaultWriteQuorum": "2",
            "managedLedgerDefaultAckQuorum": "2", "managedLedgerMaxEntriesPerLedger": "200"}},
        "proxy": {"enabled": False},
        "autoRecovery": {"enabled": True, "lostBookieRecoveryDelaySeconds": 2},
        "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"},
    },
}
#: Sends one message every few milliseconds until the stop file exists; prints each acknowledged body.
PRODUCER = """
import os, sys, time, pulsar
url, topic, stop = sys.argv[1], sys.argv[2], sys.argv[3]
client = pulsar.Client(url, operation_timeout_seconds=60)
producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=60000)
i = 0
while not os.path.exists(stop):
    body = f"m-{i}"
    producer.send(body.encode())
    print(body, flush=True)
    i += 1
    time.sleep(0.005)
client.close()
"""
#: Reads the whole topic from the start; prints the bodies as JSON.
READER = """
import json, sys, pulsar
url, topic = sys.argv[1], sys.argv[2]
client = pulsar.Client(url, operation_timeout_seconds=60)
reader = client.create_reader(topic, pulsar.MessageId.earliest)
got = []
while reader.has_message_available():
    got.append(reader.read_next(timeout_millis=30000).data().decode())
client.close()
print("READ " + json.dumps(got))
"""
#: Produces a few messages and reads them back; prints ROUND-TRIP ok.
ROUND_TRIP = """
import sys, pulsar
url, topic = sys.argv[1], sys.argv[2]
client = pulsar.Client(url, operation_timeout_seconds=60)
consumer = client.subscribe(topic, "rt", initial_position=pulsar.InitialPosition.Earliest)
producer = client.create_producer(topic)
sent = [f"{topic}-{i}" for i in range(10)]
for body in sent:
    producer.send(body.encode())
got = [consumer.receive(timeout_millis=60000).data().decode() for _ in sent]
client.close()
print("ROUND-TRIP " + ("ok" if sorted(got) == sorted(sent) else f"mismatch {got}"))
"""
#: GETs a bookie admin URL; prints the status and the body.
HTTP_GET = """
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
"""


def bookie_id(i: int) -> str:
    return BOOKIE_ID.format(cluster=CLUSTER, i=i, ns=NS)


class Live(operator_live.Live):
    async def pulsar(self) -> dict[str, Any]:
        obj = await self.api.get(CLUSTERS, NS, CLUSTER)
        assert obj is not None
        return obj

    async def bookie_http(self, path: str, bookie: int = 0) -> tuple[int, str]:
        url = f"http://{CLUSTER}-bookie-{bookie}.{CLUSTER}-bookie.{NS}.svc:8000{path}"
        result = await self.cluster.run([sys.executable, "-c", HTTP_GET, url], timeout_s=30)
        status, _, body = result.stdout.strip().partition(" ")
        return int(status or 0), body

    async def read_all(self) -> list[str]:
        result = await self.client_script(CLUSTER, READER, TOPIC, timeout_s=120)
        line = next((x for x in result.stdout.splitlines() if x.startswith("READ ")), None)
        assert line is not None, result.stdout[-2000:] + result.stderr[-3000:]
        got: list[str] = json.loads(line[5:])
        return got

    async def round_trip(self, topic: str) -> None:
        result = await self.client_script(CLUSTER, ROUND_TRIP, topic)
        assert "ROUND-TRIP ok" in result.stdout, result.stdout[-2000:] + result.stderr[-3000:]

    async def restart_operator(self) -> None:
        """SIGKILL the operator (its whole process group, by pid), then start it again."""
        proc = self.operator.proc
        assert proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        await self.operator.start()
        await emulation.wait_for(self.operator.healthy, 60, "operator back")

    async def events(self) -> list[str]:
        items, _ = await self.api.list(EVENTS)
        return [i.get("reason", "") for i in items
                if (i.get("involvedObject") or {}).get("name") == CLUSTER]


@contextlib.asynccontextmanager
async def producing(live: Live, state: pathlib.Path) -> AsyncIterator[list[str]]:
    """A producer sending steadily in the background; yields the bodies acknowledged so far."""
    url = (await live.pulsar())["status"]["brokerServiceURL"]
    stop = state / "stop-producer"
    acked: list[str] = []
    proc = await asyncio.create_subprocess_exec(
        *live.cluster.wrap([sys.executable, "-c", PRODUCER, url, TOPIC, str(stop)]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)

    async def collect() -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            text = line.decode().strip()
            if text.startswith("m-"):  # the client library logs to stdout too
                acked.append(text)

    reader = asyncio.create_task(collect())
    try:
        await emulation.wait_for(lambda: len(acked) >= 50, 90, "the producer's first acknowledgements")
        yield acked
    finally:
        stop.touch()
        try:
            async with asyncio.timeout(60):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        await reader
        assert proc.stderr is not None
        err = (await proc.stderr.read()).decode()
        assert proc.returncode == 0, err[-3000:]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[Live]:
    async with operator_live.started(Live, tmp_path_factory.mktemp("live-loops"), request) as running:
        yield running


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    return tmp_path_factory.mktemp("loops-state")


async def test_the_cluster_with_four_bookies_becomes_ready(live: Live) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(SPEC))
    await live.wait(CLUSTERS, CLUSTER, is_ready, "PulsarCluster Ready", READY_TIMEOUT_S)
    await live.wait(CLUSTERS, CLUSTER, lambda o: condition(o, "AutoRecovery").get("reason") == "Idle",
                    "the autorecovery loop watching", 60)


async def test_a_bookie_lost_with_its_volume_is_recovered_and_replaced(live: Live) -> None:
    fill = ("import sys, pulsar\nc = pulsar.Client(sys.argv[1])\np = c.create_producer(sys.argv[2])\n"
            "[p.send(bytes(1000)) for _ in range(2000)]\nc.close()\n")
    result = await live.client_script(CLUSTER, fill, TOPIC, timeout_s=120)
    assert result.returncode == 0, result.stderr[-2000:]
    before = (await live.pulsar())["status"].get("autoRecovery", {})
    started = time.monotonic()
    # The node dies with its local disk: the bookie frozen, its volumes emptied, then killed.
    # (Deleting the PVC objects would not do here: the StatefulSet recreates a claim of the same
    # name for the new pod at once, and the harness keeps a claim's directory while it is in use.)
    live.cluster.kill_pod(f"{CLUSTER}-bookie-2", signum=signal.SIGSTOP)
    for claim in ("journal", "ledgers"):
        volume = live.cluster.kubelet.claims.path(NS, f"{claim}-{CLUSTER}-bookie-2")
        for child in volume.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    live.cluster.kill_pod(f"{CLUSTER}-bookie-2", signum=signal.SIGKILL)

    def replaced(obj: dict[str, Any]) -> bool:
        # The loop forgets the lost bookie only once no ledger names it and nothing is
        # under-replicated: every fragment it held is back to its write quorum elsewhere.
        now = (obj.get("status") or {}).get("autoRecovery", {})
        return now.get("bookiesReplaced", 0) > before.get("bookiesReplaced", 0)

    cluster = await live.wait(CLUSTERS, CLUSTER, replaced, "bookie-2 recovered and replaced", RECOVERY_TIMEOUT_S)
    recovered_s = time.monotonic() - started
    await live.wait(api.PODS, f"{CLUSTER}-bookie-2", is_ready,
                    "bookie-2 running as a new bookie", LOOP_TIMEOUT_S)
    elapsed = time.monotonic() - started
    assert (await live.bookie_http("/api/v1/autorecovery/list_under_replicated_ledger"))[0] == 404
    got = await live.read_all()
    assert len(got) == 2000, f"{2000 - len(got)} of 2000 acknowledged messages lost"
    reasons = await live.events()
    # RecoveryStarted/Completed are reported when a step sees the under-replicated count move,
    # which a recovery faster than a resync can slip between.
    assert {"BookieLost", "BookieReplaced"} <= set(reasons), reasons
    recovery = cluster["status"]["autoRecovery"]
    print(f"\nBOOKIE LOST: every fragment re-replicated and the bookie forgotten {recovered_s:.1f} s after the loss "
          f"(recovery seen by the status: {recovery.get('lastRecoverySeconds')} s), "
          f"back as a new bookie {elapsed:.1f} s after the loss")


async def test_a_rolling_restart_of_the_bookies_pauses_recovery_and_restores_it(live: Live) -> None:
    before = (await live.pulsar())["status"]["autoRecovery"]
    started = time.monotonic()
    await live.kubectl("patch", "pulsarcluster", CLUSTER, "--type", "merge", "-p", json.dumps(
        {"spec": {"bookkeeper": {"config": {"gcWaitTime": "600000"}}}}))
    await live.wait(CLUSTERS, CLUSTER, lambda o: (o.get("status") or {}).get("autoRecovery", {})
                    .get("pausedForRollout") is True, "recovery paused", LOOP_TIMEOUT_S)
    status, body = await live.bookie_http("/api/v1/autorecovery/lost_bookie_recovery_delay")
    assert status == 200 and body.strip().endswith("1800"), body

    def rolled(sts: dict[str, Any]) -> bool:
        s = sts.get("status") or {}
        return s.get("currentRevision") == s.get("updateRevision") and s.get("readyReplicas") == 4

    await live.wait(api.STATEFUL_SETS, f"{CLUSTER}-bookie", rolled, "every bookie restarted", LOOP_TIMEOUT_S)
    after = await live.wait(CLUSTERS, CLUSTER, lambda o: (o.get("status") or {}).get("autoRecovery", {})
                            .get("pausedForRollout") is False, "recovery resumed", LOOP_TIMEOUT_S)
    elapsed = time.monotonic() - started
    status, body = await live.bookie_http("/api/v1/autorecovery/lost_bookie_recovery_delay")
    assert status == 200 and body.strip().endswith(" 2"), body
    # No bookie restarted by the rollout was taken for lost: nothing was re-replicated.
    assert after["status"]["autoRecovery"].get("recoveriesCompleted") == before.get("recoveriesCompleted")
    assert after["status"]["autoRecovery"].get("recoveringSinceMs") is None
    reasons = await live.events()
    assert {"RecoveryPaused", "RecoveryResumed"} <= set(reasons), reasons
    print(f"\nROLLING RESTART: 4 bookies rolled with recovery paused, resumed {elapsed:.1f} s after the change")


async def test_four_to_three_bookies_drains_before_removal_survives_an_operator_kill_and_loses_nothing(
        live: Live, state_dir: pathlib.Path) -> None:
    async with producing(live, state_dir) as acked:
        started = time.monotonic()
        await live.kubectl("patch", "pulsarcluster", CLUSTER, "--type", "merge",
                           "-p", json.dumps({"spec": {"bookkeeper": {"replicas": 3}}}))
        # Killed at the first step it is seen in (ReadOnly, Draining or ScaledDown), then started again.
        await live.wait(CLUSTERS, CLUSTER, lambda o: (o.get("status") or {}).get("decommission", {}).get("phase")
                        is not None, "bookie 3 being decommissioned", LOOP_TIMEOUT_S)
        await live.restart_operator()
        killed_in = (await live.pulsar())["status"]["decommission"]
        await live.wait(api.STATEFUL_SETS, f"{CLUSTER}-bookie", lambda s: s["spec"]["replicas"] == 3,
                        "StatefulSet scaled to 3", LOOP_TIMEOUT_S)
        scaled = time.monotonic() - started
        # Scaled only once drained: nothing names the bookie and nothing is under-replicated.
        status, body = await live.bookie_http(f"/api/v1/autorecovery/decommission?bookie_src={bookie_id(3)}")
        assert status == 200 and json.loads(body)["ledgers"] == 0, body
        assert (await live.bookie_http("/api/v1/autorecovery/list_under_replicated_ledger"))[0] == 404
        cluster = await live.wait(CLUSTERS, CLUSTER, lambda o: (o.get("status") or {}).get("decommission", {})
                                  .get("bookiesDecommissioned") == 1, "bookie 3 forgotten", LOOP_TIMEOUT_S)
        done = time.monotonic() - started
    assert cluster["status"]["decommission"].get("phase") is None
    claims = {c["metadata"]["name"] for c in (await live.api.list(api.CLAIMS))[0]}
    assert f"ledgers-{CLUSTER}-bookie-3" not in claims and f"ledgers-{CLUSTER}-bookie-2" in claims
    got = await live.read_all()
    assert not set(acked) - set(got), f"lost {len(set(acked) - set(got))} acknowledged messages"
    reasons = await live.events()
    assert {"DecommissionStarted", "BookieDrained", "BookieDecommissioned"} <= set(reasons), reasons
    print(f"\nDECOMMISSION 4->3: operator killed in phase {killed_in.get('phase')}; scaled after {scaled:.1f} s, "
          f"done after {done:.1f} s, {len(acked)} messages acknowledged meanwhile, all read back")


async def test_etcd_grows_to_three_members_and_back_to_one_while_the_cluster_serves(live: Live) -> None:
    def members(count: int) -> Any:
        def check(obj: dict[str, Any]) -> bool:
            membership = condition(obj, "EtcdMembership")
            return membership.get("reason") == "AsExpected" and f"{count} etcd members" in membership.get("message", "")
        return check

    started = time.monotonic()
    await live.kubectl("patch", "pulsarcluster", CLUSTER, "--type", "merge",
                       "-p", json.dumps({"spec": {"etcd": {"replicas": 3}}}))
    await live.wait(CLUSTERS, CLUSTER, members(3), "3 etcd members", RECOVERY_TIMEOUT_S)
    grown = time.monotonic() - started
    sts = await live.api.get(api.STATEFUL_SETS, NS, f"{CLUSTER}-etcd")
    assert sts is not None and sts["spec"]["replicas"] == 3
    await live.round_trip("persistent://public/default/after-etcd-growth")
    started = time.monotonic()
    await live.kubectl("patch", "pulsarcluster", CLUSTER, "--type", "merge",
                       "-p", json.dumps({"spec": {"etcd": {"replicas": 1}}}))
    await live.wait(CLUSTERS, CLUSTER, members(1), "1 etcd member", RECOVERY_TIMEOUT_S)
    await live.wait(api.STATEFUL_SETS, f"{CLUSTER}-etcd", lambda s: s["spec"]["replicas"] == 1, "etcd scaled to 1")
    shrunk = time.monotonic() - started
    await live.round_trip("persistent://public/default/after-etcd-shrink")
    reasons = await live.events()
    assert {"EtcdMemberAdding", "EtcdMemberAdded", "EtcdMemberRemoved"} <= set(reasons), reasons
    print(f"\nETCD 1->3 in {grown:.1f} s, 3->1 in {shrunk:.1f} s, produce/consume after each")
