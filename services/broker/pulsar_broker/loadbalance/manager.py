"""The broker's load manager: publishes this broker's load report and, on the leader broker
with loadBalancerEnabled=true, runs the planner every shedding interval.

Every broker samples its load every loadBalancerReportUpdateMinIntervalMillis
and writes the report into its registration key `/loadbalance/brokers/<broker>`
when a figure moved by more than loadBalancerReportUpdateThresholdPercentage,
its bundles changed, or loadBalancerReportUpdateMaxIntervalMinutes passed.
Brokers elect a leader at `/loadbalance/leader`. The leader reads every report,
splits bundles over the loadBalancerNamespaceBundleMax* limits, and sheds
bundles from overloaded brokers with unload-with-destination, through the same
admin REST calls an operator would make. A round after one that changed
something waits a few report intervals, so the reports show the moved load
where it went and no decision is taken twice on stale figures. Under the operator the brokers run with loadBalancerEnabled=false and
the operator runs this planner instead (docs/load-balancing.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
from typing import Any

from pulsar_common import clock, naming
from pulsar_common.metadata import errors as md_errors
from pulsar_common.metadata import tasks as md_tasks

from pulsar_broker import errors
from pulsar_broker.loadbalance import model, planner, report, settings, shedding, splitting
from pulsar_broker.namespace import registry
from pulsar_broker.service.broker_service import BrokerService

log = logging.getLogger(__name__)

LEADER_PATH = "/loadbalance/leader"
#: A round after a change waits this many report intervals: moved topics have no rate in
#: their new owner's first sample, and a broker rewrites its report once its figures moved.
SETTLE_REPORTS = 3
_REGISTRATION_KEYS = ("webServiceUrl", "pulsarServiceUrl")
_FIGURES = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut", "numTopics",
            "numConsumers", "numProducers")


class LoadManager:
    def __init__(self, service: BrokerService, *,
                 now_ms: clock.NowMs = clock.wall_clock_ms) -> None:
        self.service = service
        self._now_ms = now_ms
        conf = service.config
        self.shedding_settings, self.split_settings = settings.from_broker_config(conf)
        self.report_interval_s = conf.load_balancer_report_update_min_interval_millis / 1000.0
        self.shedding_interval_s = (conf.load_balancer_shedding_interval_seconds
                                    or conf.load_balancer_shedding_interval_minutes * 60.0)
        self.sampler = report.LoadSampler(service)
        self.election = service.resources.store.leader_election(LEADER_PATH)
        #: The latest sample, whether or not it was written.
        self.last_report: model.BrokerReport | None = None
        self._written: dict[str, Any] | None = None
        self._written_at_ms = 0
        self._state = shedding.SheddingState()
        self._last_change_ms = 0
        #: Rounds that split or unloaded something (the leader logs each one).
        self.rounds = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._report_loop(), name="load-report"),
                       asyncio.create_task(self._leader_loop(), name="load-balancer")]

    async def close(self) -> None:
        for task in self._tasks:
            await md_tasks.cancel_and_wait(task)
        self._tasks = []
        with contextlib.suppress(md_errors.MetadataStoreError):
            await self.election.release()

    async def leader(self) -> dict[str, Any] | None:
        """The leader's {"serviceUrl", "brokerId"}, None when nobody leads."""
        value = await self.election.leader_value()
        return None if value is None else dict(json.loads(value))

    # Reports

    async def _report_loop(self) -> None:
        while True:
            try:
                await self.publish()
            except Exception:
                log.exception("writing the load report failed")
            await asyncio.sleep(self.report_interval_s)

    async def publish(self, force: bool = False) -> bool:
        """Sample the load; write it when it changed enough (or force). True when written."""
        sample = self.sampler.sample(self._now_ms())
        self.last_report = sample
        figures = sample.to_json()
        max_age_ms = self.service.config.load_balancer_report_update_max_interval_minutes * 60_000
        path = f"{registry.BROKERS_ROOT}/{self.service.broker_id}"
        store = self.service.resources.store
        found = await store.get(path)
        if found is None:
            return False  # Not registered (its session was lost): registration comes first.
        registered = json.loads(found.value)
        # A registration without figures was just (re)created: it needs them whatever changed.
        if not (force or self._written is None or "lastUpdate" not in registered
                or sample.last_update_ms - self._written_at_ms >= max_age_ms
                or self._changed(figures)):
            return False
        # The registration's own fields (URLs, listeners, TLS URLs) stay as registered.
        value = {**registered,
                 **{k: v for k, v in figures.items() if k not in _REGISTRATION_KEYS}}
        try:
            await store.put(path, json.dumps(value).encode(), found.stat.version, ephemeral=True)
        except (md_errors.BadVersionError, md_errors.NotFoundError):
            return False
        self._written, self._written_at_ms = figures, sample.last_update_ms
        return True

    def _changed(self, figures: dict[str, Any]) -> bool:
        assert self._written is not None
        if figures["bundles"] != self._written["bundles"]:
            return True
        threshold = self.service.config.load_balancer_report_update_threshold_percentage / 100.0
        for key in _FIGURES:
            old, new = float(self._written[key]), float(figures[key])
            if abs(new - old) > threshold * max(abs(old), 1.0):
                return True
        weights = self.shedding_settings
        for resource, weight in (("cpu", weights.cpu_weight), ("memory", weights.memory_weight),
                                 ("bandwidthIn", weights.bandwidth_in_weight),
                                 ("bandwidthOut", weights.bandwidth_out_weight)):
            if weight <= 0:
                continue  # The planner ignores it: its changes need no new report.
            old_usage = model.ResourceUsage.from_json(self._written[resource]).percent
            new_usage = model.ResourceUsage.from_json(figures[resource]).percent
            if abs(new_usage - old_usage) > 100.0 * threshold:
                return True
        return False

    async def reports(self) -> list[model.BrokerReport]:
        """The latest report of every live broker (brokers that wrote none yet are left out)."""
        store = self.service.resources.store
        found = []
        for broker in await store.get_children(registry.BROKERS_ROOT):
            value = await store.get(f"{registry.BROKERS_ROOT}/{broker}")
            if value is not None:
                data = json.loads(value.value)
                if "lastUpdate" in data:
                    found.append(model.BrokerReport.from_json(broker, data))
        return found

    # Leader

    async def _leader_loop(self) -> None:
        me = json.dumps({"serviceUrl": self.service.web_service_url,
                         "brokerId": self.service.broker_id}).encode()
        while True:
            try:
                if not self.election.is_leader:
                    await self.election.acquire(me, timeout_s=self.shedding_interval_s)
                elif self.service.config.load_balancer_enabled:
                    await self.run_round()
            except Exception:
                log.exception("load balancing round failed")
            await asyncio.sleep(self.shedding_interval_s)

    async def run_round(self) -> planner.Round | None:
        """One planning round (None when it is too early after the last change)."""
        settled_ms = self._last_change_ms + int(SETTLE_REPORTS * self.report_interval_s * 1000)
        if self._now_ms() < settled_ms:
            return None
        reports = await self.reports()
        if not reports:
            return None
        conf = self.service.config
        decided = planner.plan_round(
            reports, await self._bundle_counts(reports), self._state, self.shedding_settings,
            self.split_settings, self._now_ms(), shedding_enabled=conf.load_balancer_shedding_enabled,
            split_enabled=conf.load_balancer_auto_bundle_split_enabled)
        self._state = decided.state
        for split in decided.splits:
            await self._execute_split(split)
        for unload in decided.unloads:
            await self._execute_unload(unload)
        if decided.changed:
            self._last_change_ms = self._now_ms()
            self.rounds += 1
            log.info("load balancing round %d: %d splits, %d unloads", self.rounds,
                     len(decided.splits), len(decided.unloads))
        return decided

    async def _bundle_counts(self, reports: list[model.BrokerReport]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in {model.namespace_of(b) for r in reports for b in r.bundles}:
            ns = naming.NamespaceName.parse(name)
            with contextlib.suppress(errors.NotFoundError):
                counts[name] = len(await self.service.namespaces.bundles(ns))
        return counts

    async def _execute_split(self, split: splitting.Split) -> None:
        unload = str(self.service.config.load_balancer_auto_unload_split_bundles_enabled).lower()
        query = urllib.parse.urlencode({"unload": unload, "splitAlgorithmName": split.algorithm})
        await self._call_owner(split.owner, f"/admin/v2/namespaces/{split.bundle}/split?{query}")
        log.info("split bundle %s of broker %s: %s", split.bundle, split.owner, split.reason)

    async def _execute_unload(self, unload: shedding.Unload) -> None:
        query = urllib.parse.urlencode({"destinationBroker": unload.destination})
        await self._call_owner(unload.source,
                               f"/admin/v2/namespaces/{unload.bundle}/unload?{query}")
        log.info("unloaded bundle %s from %s to %s: %s", unload.bundle, unload.source,
                 unload.destination, unload.reason)

    async def _call_owner(self, broker_id: str, path: str) -> None:
        live = await self.service.namespaces.live_brokers()
        broker = live.get(broker_id)
        if broker is None:
            log.warning("broker %s is gone; skipping %s", broker_id, path)
            return
        try:
            await self.service.namespaces.forward("PUT", broker, path)
        except errors.BrokerError as exc:
            log.warning("PUT %s on %s failed: %s", path, broker_id, exc)
