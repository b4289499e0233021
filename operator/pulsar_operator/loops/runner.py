"""The loops' step after a PulsarCluster reconcile: merge their status, conditions and events.

Called by the cluster handlers (timer and change handlers alike) with the status the
reconcile produced; adds status.autoRecovery, status.decommission and the loops'
conditions, and posts every decision as an Event through `post_event` (kopf's event
API in the operator). A condition whose reason changes is an Event too, so a refusal or a
wait is announced once, not at every step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from pulsar_operator import cluster_spec, conditions, errors
from pulsar_operator.loops import autorecovery, bookie_admin, decommission, driver, report

PostEvent = Callable[[report.Event], None]
AdminFactory = Callable[[list[str]], bookie_admin.HttpBookieAdmin]
logger = logging.getLogger(__name__)
#: The condition types the loops own (kept as they were when a step observes nothing).
CONDITIONS = (autorecovery.CONDITION, decommission.CONDITION)


def _announcements(old: list[dict[str, Any]], new: list[conditions.Condition]) -> list[report.Event]:
    before = {c.get("type"): c for c in old if isinstance(c, dict)}
    result = []
    for cond in new:
        previous = before.get(cond.type) or {}
        if previous.get("reason") != cond.reason:
            kind = report.WARNING if cond.reason in ("Refused", "DrainTimedOut", "Retrying") else report.NORMAL
            result.append(report.Event(kind, f"{cond.type}{cond.reason}", cond.message or cond.reason))
    return result


async def run(body: dict[str, Any], status: dict[str, Any], client: driver.Objects, post_event: PostEvent,
              now: str, admins: AdminFactory = bookie_admin.HttpBookieAdmin) -> dict[str, Any]:
    """`status` with the loops' part added (unchanged when the spec is invalid)."""
    if cluster_spec.validate(body):
        return status
    spec = cluster_spec.parse(body)
    opened: list[bookie_admin.HttpBookieAdmin] = []

    def factory(urls: list[str]) -> bookie_admin.HttpBookieAdmin:
        opened.append(admins(urls))
        return opened[-1]

    try:
        result = await driver.step(body, spec, client, factory, int(time.time() * 1000))
    except errors.OperatorError as exc:
        logger.warning("bookie loops skipped this time: %s", exc)
        result = None
    finally:
        for admin in opened:
            await admin.close()
    old_conditions = list((body.get("status") or {}).get("conditions") or [])
    if result is None:
        kept = [c for c in old_conditions if c.get("type") in CONDITIONS]
        return {**status, "conditions": [c for c in status.get("conditions") or [] if c.get("type") not in CONDITIONS]
                + kept}
    generation = (body.get("metadata") or {}).get("generation")
    merged = conditions.merge(old_conditions, result.conditions, now, generation)
    own = {c.type for c in result.conditions}
    events = result.events + _announcements(old_conditions, result.conditions)
    for event in events:
        post_event(event)
    return {**status, **result.status,
            "conditions": [c for c in status.get("conditions") or [] if c.get("type") not in own] + merged}
