"""Container probes as the kubelet runs them: httpGet, tcpSocket and exec against the pod.

`Prober` runs one probe of one container on its schedule (initialDelaySeconds,
periodSeconds, timeoutSeconds) and turns results into a verdict with the
success and failure thresholds. Readiness starts false and flips after
successThreshold successes; liveness starts healthy and fails after
failureThreshold failures in a row (the container is then restarted).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import aiohttp

from pulsar_operator.kubelet_emulation import podspec, tasks

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Schedule:
    initial_delay_s: float
    period_s: float
    timeout_s: float
    success_threshold: int
    failure_threshold: int

    @staticmethod
    def of(probe: dict[str, Any]) -> Schedule:
        return Schedule(
            initial_delay_s=float(probe.get("initialDelaySeconds", 0)),
            period_s=float(probe.get("periodSeconds", 10)),
            timeout_s=float(probe.get("timeoutSeconds", 1)),
            success_threshold=int(probe.get("successThreshold", 1)),
            failure_threshold=int(probe.get("failureThreshold", 3)),
        )


class Verdict:
    """Consecutive results against the thresholds; `ok` is the probe's current answer."""

    def __init__(self, schedule: Schedule, initially_ok: bool) -> None:
        self.schedule = schedule
        self.ok = initially_ok
        self._successes = 0
        self._failures = 0

    def record(self, success: bool) -> bool:
        """Count one result; True when `ok` changed."""
        if success:
            self._successes, self._failures = self._successes + 1, 0
            flip = not self.ok and self._successes >= self.schedule.success_threshold
        else:
            self._successes, self._failures = 0, self._failures + 1
            flip = self.ok and self._failures >= self.schedule.failure_threshold
        if flip:
            self.ok = not self.ok
        return flip


async def http_get(session: aiohttp.ClientSession, pod: dict[str, Any], pod_ip: str, action: dict[str, Any],
                   timeout_s: float) -> bool:
    port = podspec.port_number(pod, action.get("port"))
    host = action.get("host") or pod_ip
    scheme = str(action.get("scheme") or "HTTP").lower()
    headers = {h["name"]: h["value"] for h in action.get("httpHeaders") or []}
    url = f"{scheme}://{host}:{port}{action.get('path') or '/'}"
    async with session.get(url, headers=headers, allow_redirects=False, ssl=False,
                           timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
        return 200 <= resp.status < 400


async def tcp_socket(pod: dict[str, Any], pod_ip: str, action: dict[str, Any], timeout_s: float) -> bool:
    port = podspec.port_number(pod, action.get("port"))
    async with asyncio.timeout(timeout_s):
        _, writer = await asyncio.open_connection(action.get("host") or pod_ip, port)
    writer.close()
    return True


async def run_exec(argv: list[str], timeout_s: float) -> bool:
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    try:
        async with asyncio.timeout(timeout_s):
            return await proc.wait() == 0
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return False


class Prober:
    """One probe of one running container; `on_flip(ok)` is called when its verdict changes."""

    def __init__(self, probe: dict[str, Any], initially_ok: bool, check: Callable[[float], Any],
                 on_flip: Callable[[bool], None]) -> None:
        self.verdict = Verdict(Schedule.of(probe), initially_ok)
        self._check = check
        self._on_flip = on_flip
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        await tasks.cancel_and_wait(self._task)

    async def _run(self) -> None:
        schedule = self.verdict.schedule
        await asyncio.sleep(schedule.initial_delay_s)
        while True:
            try:
                async with asyncio.timeout(schedule.timeout_s + 1):
                    success = bool(await self._check(schedule.timeout_s))
            except (OSError, TimeoutError, aiohttp.ClientError, podspec.ConfigError) as exc:
                log.debug("probe failed: %s", exc)
                success = False
            if self.verdict.record(success):
                self._on_flip(self.verdict.ok)
            await asyncio.sleep(schedule.period_s)


def checker(probe: dict[str, Any], pod: dict[str, Any], pod_ip: str, session: aiohttp.ClientSession,
            exec_argv: Callable[[list[str]], list[str]]) -> Callable[[float], Any]:
    """The check a probe makes, as a function of its timeout; exec commands run inside the container."""
    if "httpGet" in probe:
        return lambda timeout_s: http_get(session, pod, pod_ip, probe["httpGet"], timeout_s)
    if "tcpSocket" in probe:
        return lambda timeout_s: tcp_socket(pod, pod_ip, probe["tcpSocket"], timeout_s)
    if "exec" in probe:
        command = [str(part) for part in probe["exec"].get("command") or []]
        return lambda timeout_s: run_exec(exec_argv(command), timeout_s)
    raise podspec.ConfigError(f"unsupported probe {sorted(probe)}")
