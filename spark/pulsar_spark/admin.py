"""A small synchronous client of the broker's admin REST API, for the query planner.

The planner needs three things from a cluster: which topics a namespace has,
how many partitions a topic has, and each partition's managed-ledger layout
(ledgers, entry counts, last confirmed entry) from `internalStats`. The
admin API answers all three the same way for standalone and clusters, so
the planner needs no access to the metadata store for them.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from pulsar_spark import errors

#: Seconds one admin call may take before the query fails.
ADMIN_TIMEOUT_S = 30.0


def topic_path(full_name: str) -> str:
    """persistent://t/ns/topic -> persistent/t/ns/topic (URL-quoted topic part)."""
    domain, _, rest = full_name.partition("://")
    tenant, namespace, local = rest.split("/", 2)
    return f"{domain}/{tenant}/{namespace}/{urllib.parse.quote(local, safe='')}"


class AdminClient:
    def __init__(self, admin_url: str, timeout_s: float = ADMIN_TIMEOUT_S) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.timeout_s = timeout_s

    def get_json(self, path: str, *, not_found: str | None = None) -> Any:
        url = f"{self.admin_url}{path}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            reason = _reason(exc)
            if exc.code == 404 and not_found is not None:
                raise errors.TopicNotFoundError(f"{not_found}: {reason}") from exc
            raise errors.AdminApiError(f"GET {url} answered {exc.code}: {reason}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise errors.AdminApiError(
                f"cannot reach the admin API at {self.admin_url} (option admin.url): {exc}") from exc

    def send_json(self, method: str, path: str, body: Any, *, conflict_ok: bool = False) -> None:
        """PUT/POST a JSON body; with conflict_ok a 409 (already exists) is not an error."""
        url = f"{self.admin_url}{path}"
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s):
                return
        except urllib.error.HTTPError as exc:
            if exc.code == 409 and conflict_ok:
                return
            raise errors.AdminApiError(f"{method} {url} answered {exc.code}: {_reason(exc)}") \
                from exc
        except (urllib.error.URLError, OSError) as exc:
            raise errors.AdminApiError(
                f"cannot reach the admin API at {self.admin_url} (option admin.url): {exc}") from exc

    def create_subscription(self, topic: str, name: str, position: tuple[int, int]) -> None:
        """A durable subscription at position (ledger, entry); kept as it is if it exists."""
        self.send_json("PUT", f"/admin/v2/{topic_path(topic)}/subscription/"
                       f"{urllib.parse.quote(name, safe='')}",
                       {"ledgerId": position[0], "entryId": position[1]}, conflict_ok=True)

    def reset_cursor(self, topic: str, name: str, position: tuple[int, int]) -> None:
        """Move the subscription so that position is the next entry it reads."""
        self.send_json("POST", f"/admin/v2/{topic_path(topic)}/subscription/"
                       f"{urllib.parse.quote(name, safe='')}/resetcursor",
                       {"ledgerId": position[0], "entryId": position[1]})

    def partitions(self, topic: str) -> int:
        """Partitions of a partitioned topic, 0 for a non-partitioned one."""
        body = self.get_json(f"/admin/v2/{topic_path(topic)}/partitions",
                             not_found=f"namespace of {topic} not found")
        return int(body.get("partitions", 0))

    def internal_stats(self, topic: str) -> dict[str, Any]:
        """Apache's `metadata=true` asks for each ledger's metadata too (brokers may ignore it)."""
        stats = self.get_json(f"/admin/v2/{topic_path(topic)}/internalStats?metadata=true",
                              not_found=f"topic {topic} does not exist")
        if not isinstance(stats, dict):
            raise errors.AdminApiError(f"internalStats of {topic} is not an object")
        return stats

    def namespace_topics(self, namespace: str) -> list[str]:
        """Persistent topics of tenant/namespace; partitions appear as `-partition-<i>`."""
        return list(self.get_json(f"/admin/v2/persistent/{namespace}",
                                  not_found=f"namespace {namespace} does not exist"))

    def partitioned_topics(self, namespace: str) -> list[str]:
        return list(self.get_json(f"/admin/v2/persistent/{namespace}/partitioned",
                                  not_found=f"namespace {namespace} does not exist"))


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode(errors="replace")
    except OSError:
        return str(exc.reason)
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError:
        return body.strip()[:200] or str(exc.reason)
    if isinstance(parsed, dict) and "reason" in parsed:
        return str(parsed["reason"])
    return body.strip()[:200]
