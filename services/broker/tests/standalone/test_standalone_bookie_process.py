"""`pulsar standalone` with standaloneBookieProcess=true: the bookie is a child process that
lives and dies with the standalone, and what was acknowledged survives a crash of both."""

from __future__ import annotations

import os
import pathlib
import signal

import pulsar
import pytest
from pulsar_broker.testing import StandaloneProcess
from pulsar_common import testing

MESSAGES = 20
GONE_TIMEOUT_S = 10.0


def _bookie_process(node: StandaloneProcess) -> int:
    """The pid of the standalone's one child process, the `pulsar bookie`."""
    children = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == node.pid:
            children.append((int(entry.name), cmdline))
    assert len(children) == 1, children
    pid, cmdline = children[0]
    assert b"bookie" in cmdline
    return pid


def _gone(pid: int) -> bool:
    """No such process, or only a zombie left: every thread has exited (the leader shows
    as a zombie while the other threads of a killed process are still ending)."""
    try:
        tasks = list(pathlib.Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True
    states = []
    for task in tasks:
        try:
            states.append((task / "stat").read_text().rpartition(")")[2].split()[0])
        except OSError:
            continue  # that thread has just ended
    return all(state == "Z" for state in states)


def _standalone(tmp_path: pathlib.Path) -> StandaloneProcess:
    node = StandaloneProcess(tmp_path / "data", {"standaloneBookieProcess": "true"})
    node.extra_arguments = ["-nfw"]
    return node


@pytest.mark.skipif(testing.SETPRIV is None,
                    reason="the parent-death signal is set by util-linux's setpriv")
def test_killed_standalone_takes_its_bookie_along_and_a_restart_serves_what_was_acknowledged(
        tmp_path):
    """SIGKILL of the standalone ends its bookie child too (parent-death signal); started
    again, it serves every message that was acknowledged; and a bookie child that dies
    stops the standalone."""
    node = _standalone(tmp_path).start()
    topic = "persistent://public/default/bookie-process"
    try:
        bookie_pid = _bookie_process(node)
        assert testing.port_open(node.bookie_port)
        client = pulsar.Client(node.service_url)
        try:
            producer = client.create_producer(topic, batching_enabled=False)
            for i in range(MESSAGES):
                producer.send(f"m-{i}".encode())  # returns once the bookie acknowledged it
        finally:
            client.close()
    finally:
        node.kill()

    testing.wait_until(lambda: _gone(bookie_pid), GONE_TIMEOUT_S, "the bookie process to end")
    assert not testing.port_open(node.bookie_port)

    node.start()
    try:
        restarted_bookie_pid = _bookie_process(node)
        assert restarted_bookie_pid != bookie_pid
        client = pulsar.Client(node.service_url)
        try:
            consumer = client.subscribe(topic, "after-crash",
                                        initial_position=pulsar.InitialPosition.Earliest)
            received = [consumer.receive(10_000).data().decode() for _ in range(MESSAGES)]
        finally:
            client.close()
        assert received == [f"m-{i}" for i in range(MESSAGES)]

        # The other way round (sharing this start): a bookie that dies stops the standalone,
        # which cannot store anything without it, with exit code 1.
        os.kill(restarted_bookie_pid, signal.SIGKILL)
        assert node.process is not None
        assert node.process.wait(30) == 1
        assert "the bookie process exited with -9: the standalone stops" in node.log_text()
    finally:
        node.stop()
