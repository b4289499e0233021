"""The planner is a pure core: the operator imports it without the broker's adapters."""

from __future__ import annotations

import subprocess
import sys

ADAPTERS = ("aiohttp", "grpc", "pulsar_common.metadata", "pulsar_broker.service.broker_service",
            "pulsar_broker.web")


def test_the_planner_imports_no_network_store_or_broker_service_module() -> None:
    code = ("import sys, pulsar_broker.loadbalance.planner, pulsar_broker.loadbalance.settings; "
            f"print([m for m in {ADAPTERS!r} if m in sys.modules])")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, timeout=60).stdout.strip()
    assert found == "[]"
