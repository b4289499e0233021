"""Helpers for tests and local clusters: free ports, readiness waits, child processes by pid."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence

from pulsar_common import backoff

#: Ports already handed out by this process: a port is free until its user binds it, so
#: handing it out twice (to two bookies of one cluster, say) would make them collide.
_HANDED_OUT: set[int] = set()
#: Pauses between checks of a readiness condition: quick for what is nearly ready,
#: a few times a second for a process that takes a while to start.
READINESS_POLL = backoff.BackoffPolicy(first_s=0.01, max_s=0.2)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, never the same twice in one process."""
    while True:
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
            sock.bind((host, 0))
            port: int = sock.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll condition until true; fail early when process died, or after timeout_s."""
    deadline = time.monotonic() + timeout_s
    delays = READINESS_POLL.start()
    while True:
        if condition():
            return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not ready after {timeout_s}s")
        time.sleep(delays.next_delay())


try:
    # Loaded here, not in the child: between fork and exec nothing may be imported.
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:
    _LIBC = None
_PR_SET_PDEATHSIG = 1


#: util-linux's setpriv, which sets the parent-death signal and then execs the command.
SETPRIV = shutil.which("setpriv")


def dying_with_parent(argv: Sequence[str], signal_name: str = "TERM") -> list[str]:
    """argv for a child process of a test or local cluster that the kernel sends SIGTERM
    (or signal_name) when its parent dies, so a killed test run leaks no servers (Linux).

    The signal is set by `setpriv --pdeathsig` in the child, after the fork, rather than by a
    preexec_fn: a preexec_fn runs Python between fork and exec, which deadlocks now and then
    when the parent has other threads (the official client's, gRPC's) holding a lock at the
    fork. Without setpriv the command runs unprotected."""
    if SETPRIV is None:
        return list(argv)
    return [SETPRIV, "--pdeathsig", signal_name, "--", *argv]


def die_with_parent() -> None:
    """Ask the kernel to send this process SIGTERM when its parent dies (Linux); for a
    process to call on itself, never as a preexec_fn (see dying_with_parent)."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it does not exit in time; always reaps the pid."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            kill_process(process)
    process.wait()


def kill_process(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL, the way a crash looks to storage, and reap."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)
    process.wait()
