"""The nemesis of a chaos run: one fault per cycle, chosen by a seeded random.Random.

The seed fixes the schedule (which fault, on which process, for how long, in which
order); thread timing is the machine's, so a replay reruns the same attack, not the
same interleaving. Faults are dealt like cards: every kind comes once, in a shuffled
order, before any comes again, so a short run still covers every kind.

Kinds:
- ``kill-<role>``: SIGKILL one etcd member, bookie, broker or the proxy, then restart it on
  the same ports and data;
- ``pause-broker`` / ``pause-bookie``: SIGSTOP for longer than the metadata session
  timeout, then SIGCONT. The paused broker's bundles move to the other broker, which
  fences the paused one's ledgers: once resumed it must not get an add acknowledged;
- ``etcd-leader``: SIGKILL the etcd leader, then restart it;
- ``relay-delay`` / ``relay-drop`` / ``relay-cut``: the fault-injecting relay in front of one
  bookie slows, black-holes or resets every broker-to-bookie connection;
- ``disk-full``: one bookie's filesystem (a tmpfs made for the run) filled to the last byte;
- ``clock-jump``: skipped, see CLOCK_JUMP_SKIPPED.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import signal
import time
from collections.abc import Callable

from pulsar_bookie.service import testing as bookie_testing
from pulsar_broker import testing as broker_testing

from tools.chaos import cluster as chaos_cluster

#: Why clock jumps are not injected: every service process reads the operating system's
#: clocks (time.time, time.monotonic, the event loop's clock) directly; only in-process
#: cores take an injectable `now_ms`, and those are covered by seeded simulations in the
#: unit tests. Jumping a real process's clock would need libfaketime, which is not
#: installed, or changing the machine's clock, which would disturb every other process.
CLOCK_JUMP_SKIPPED = ("the service processes take time from the OS clock directly and "
                      "libfaketime is not available; clock-driven cores are tested in-process "
                      "with ManualClock instead")

KINDS = ("kill-etcd", "kill-bookie", "kill-broker", "kill-proxy", "pause-broker",
         "pause-bookie", "etcd-leader", "relay-delay", "relay-drop", "relay-cut", "disk-full")


@dataclasses.dataclass
class Fault:
    cycle: int
    kind: str
    target: str
    hold_s: float
    started_s: float = 0.0
    healed_s: float = 0.0
    recovered_s: float = 0.0
    note: str = ""

    @property
    def touches_broker(self) -> bool:
        """A broker killed or paused: its unpersisted acknowledgements may be lost."""
        return self.target.startswith("broker")


class Nemesis:
    def __init__(self, cluster: chaos_cluster.ChaosCluster, seed: int,
                 excluded: frozenset[str] = frozenset()) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self._deck: list[str] = []
        self.kinds = [k for k in KINDS if k not in excluded
                      and (k != "disk-full" or cluster.can_fill_disks)]

    def next_fault(self, cycle: int) -> Fault:
        if not self._deck:
            self._deck = list(self.kinds)
            self.rng.shuffle(self._deck)
        kind = self._deck.pop()
        session_s = chaos_cluster.SESSION_TIMEOUT_MS / 1000
        if kind.startswith("pause"):
            hold = session_s + self.rng.uniform(2.0, 4.0)
        else:
            hold = self.rng.uniform(2.0, 6.0)
        role = {"kill-etcd": "etcd", "kill-bookie": "bookie", "kill-broker": "broker",
                "pause-broker": "broker", "kill-proxy": "proxy"}.get(kind, "bookie")
        if kind == "etcd-leader":
            target = "etcd-leader"
        elif role == "proxy":
            target = "proxy"
        else:
            count = {"etcd": 3, "bookie": len(self.cluster.bookies),
                     "broker": len(self.cluster.brokers)}[role]
            target = f"{role}-{self.rng.randrange(count)}"
        return Fault(cycle, kind, target, round(hold, 2))

    def inflict(self, fault: Fault) -> Callable[[], None]:
        """Apply the fault now; returns what heals it."""
        fault.started_s = time.monotonic()
        role, _, index_text = fault.target.partition("-")
        index = int(index_text) if index_text.isdigit() else 0
        c = self.cluster
        if fault.kind == "kill-etcd" or fault.kind == "etcd-leader":
            if fault.kind == "etcd-leader":
                leader = c.etcd_leader()
                index = 0 if leader is None else leader
                fault.target = f"etcd-{index}"
            member = c.etcd[index]
            member.kill()

            def restart_member() -> None:
                member.launch()
                member.wait_healthy()

            return restart_member
        if fault.kind.startswith("kill-"):
            process: bookie_testing.BookieProcess | broker_testing.ServiceProcess
            if role == "bookie":
                process = c.bookies[index]
            elif role == "broker":
                process = c.brokers[index]
            else:
                process = c.proxy
            process.kill()

            def restart() -> None:
                process.start()

            return restart
        if fault.kind.startswith("pause"):
            if role == "broker":
                with contextlib.suppress(OSError, ValueError):
                    owned = broker_testing.owned(c.brokers[index])
                    fault.note = f"it owned {len(owned)} bundles"
            pid = c.brokers[index].pid if role == "broker" else c.bookies[index].pid
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)
            return lambda: os.kill(pid, signal.SIGCONT)
        if fault.kind.startswith("relay"):
            relay = c.relays[index]
            mode = fault.kind.removeprefix("relay-")
            delay_ms = self.rng.randrange(50, 500) if mode == "delay" else 0
            if delay_ms:
                fault.note = f"{delay_ms} ms per chunk"
            relay.set_mode(mode, delay_ms)
            return relay.heal
        if fault.kind == "disk-full":
            return self._fill_disk(c.disk_of(c.bookies[index]), fault)
        raise ValueError(f"unknown fault kind {fault.kind}")

    @staticmethod
    def _fill_disk(disk: os.PathLike[str], fault: Fault) -> Callable[[], None]:
        filler = os.path.join(disk, "chaos-filler")
        written = 0
        # MiB chunks, then smaller ones, unbuffered: to the last byte.
        with open(filler, "wb", buffering=0) as out:
            for size in (1 << 20, 4096, 1):
                chunk = b"\0" * size
                with contextlib.suppress(OSError):
                    while True:
                        written += out.write(chunk) or 0
        fault.note = f"{written >> 20} MiB written until ENOSPC"

        def heal() -> None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(filler)

        return heal
