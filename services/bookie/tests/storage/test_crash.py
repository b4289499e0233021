"""SIGKILL a real bookie process at random moments: every acknowledged add must read back identical.

The child (`python -m pulsar_bookie.storage.stress`) streams concurrent adds on
several ledgers with a small write cache and short flush interval, so kills
land before, during and between flushes, journal rolls and entry log rolls.
Set PULSAR_CRASH_SEED to replay a failing run.
"""

from __future__ import annotations

import os
import pathlib
import random
import signal
import subprocess
import sys

import crc32c
import pytest
from pulsar_bookie import errors
from pulsar_bookie.storage import engine, stress

SEED = int(os.environ.get("PULSAR_CRASH_SEED", random.randrange(1 << 30)))


def _run_and_kill(
    data_dir: pathlib.Path, seed: int, kill_after_acks: int, run_number: int = 0
) -> list[str]:
    """Start the driver, SIGKILL it after the given number of ACK lines; returns its output lines."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pulsar_bookie.storage.stress",
            "--data-dir",
            str(data_dir),
            "--seed",
            str(seed),
            "--run",
            str(run_number),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    acks = 0
    try:
        assert child.stdout is not None
        for raw in child.stdout:
            line = raw.decode().strip()
            lines.append(line)
            if line.startswith("ACK"):
                acks += 1
                if acks >= kill_after_acks:
                    os.kill(child.pid, signal.SIGKILL)
                    break
        # Lines already written by the child before it died still count as acknowledged.
        lines.extend(raw.decode().strip() for raw in child.stdout)
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    assert acks >= kill_after_acks, (
        f"child ended early: {child.stderr.read().decode() if child.stderr else ''}"
    )
    return lines


async def _verify(data_dir: pathlib.Path, seed: int, lines: list[str]) -> None:
    acked: dict[int, list[tuple[int, int]]] = {}
    events: dict[str, set[int]] = {"FENCED": set(), "DELETING": set(), "DELETED": set()}
    for line in lines:
        kind, *fields = line.split()
        if kind == "ACK":
            acked.setdefault(int(fields[0]), []).append((int(fields[1]), int(fields[2])))
        elif kind in events:
            events[kind].add(int(fields[0]))
    bookie = engine.LedgerStorageEngine(stress.stress_config(data_dir))
    await bookie.start()
    try:
        present = set(await bookie.list_ledgers())
        assert not events["DELETED"] & present, f"seed {seed}: deleted ledgers came back"
        for ledger, entries in acked.items():
            if ledger in events["DELETED"]:
                continue
            if ledger not in present:
                # Only a deletion in progress at the kill may have removed it.
                assert ledger in events["DELETING"], f"seed {seed}: ledger {ledger} lost"
                continue
            for entry, crc in entries:
                await _check_entry(bookie, seed, ledger, entry, crc)
        for ledger in events["FENCED"]:
            assert await bookie.is_fenced(ledger), f"seed {seed}: fence lost"
        # The bookie still takes adds after recovery.
        await bookie.add_entry(999, 0, -1, b"after", stress.MASTER_KEY)
    finally:
        await bookie.close()


async def _check_entry(
    bookie: engine.LedgerStorageEngine, seed: int, ledger: int, entry: int, crc: int
) -> None:
    try:
        stored = await bookie.read_entry(ledger, entry)
    except errors.BookieError as exc:
        raise AssertionError(f"seed {seed}: acknowledged {ledger}:{entry} lost: {exc!r}") from exc
    assert stored.payload == stress.payload(seed, ledger, entry), f"seed {seed}: {ledger}:{entry}"
    assert crc32c.crc32c(stored.payload) == crc
    assert await bookie.last_entry_id(ledger) >= entry


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["early", "middle", "late"])
async def test_acknowledged_adds_survive_sigkill(tmp_path: pathlib.Path, moment: str) -> None:
    rng = random.Random(f"{SEED}-{moment}")
    kill_after = {
        "early": rng.randint(1, 200),
        "middle": rng.randint(500, 2000),
        "late": rng.randint(5000, 20000),
    }
    seed = rng.randrange(1 << 30)
    print(f"PULSAR_CRASH_SEED={SEED} seed={seed} kill_after={kill_after[moment]}")
    lines = _run_and_kill(tmp_path, seed, kill_after[moment])
    await _verify(tmp_path, seed, lines)


@pytest.mark.slow
async def test_repeated_kills_and_restarts_lose_nothing(tmp_path: pathlib.Path) -> None:
    """Kill, recover (which checkpoints), kill again: recovery itself is crash safe."""
    rng = random.Random(f"{SEED}-repeat")
    seed = rng.randrange(1 << 30)
    first = _run_and_kill(tmp_path, seed, rng.randint(300, 1500))
    await _verify(tmp_path, seed, first)
    second = _run_and_kill(tmp_path, seed, rng.randint(300, 1500), run_number=1)
    await _verify(tmp_path, seed, first + second)
