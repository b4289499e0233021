"""The process's own series on every `/metrics`: CPU, memory, file descriptors, start time.

Apache's processes are JVMs and export `process_*` and `jvm_*`; ours export
prometheus_client's `process_*` (process_cpu_seconds_total,
process_resident_memory_bytes, process_virtual_memory_bytes,
process_open_fds, process_max_fds, process_start_time_seconds, read from
/proc), `python_info` and `python_gc_*` in place of `jvm_*`. The broker,
the bookie and the proxy register them in the private registry each serves.
"""

from __future__ import annotations

import prometheus_client
from prometheus_client import registry as prometheus_registry

#: The series every process serves, whatever its role (the ones dashboards read).
PROCESS_SERIES = ("process_cpu_seconds_total", "process_resident_memory_bytes",
                  "process_open_fds", "process_start_time_seconds", "python_info")


def register(registry: prometheus_registry.CollectorRegistry) -> None:
    """Add the process, platform and garbage-collector collectors to registry."""
    prometheus_client.ProcessCollector(registry=registry)
    prometheus_client.PlatformCollector(registry=registry)
    prometheus_client.GCCollector(registry=registry)
