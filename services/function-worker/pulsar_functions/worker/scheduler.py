"""Which worker runs which function instance: the leader's pure decision.

An instance stays where it is while its worker lives (moving it would
restart it for nothing); instances without a live worker go, in a fixed
order, to the worker running the fewest. With no worker alive nothing is
assigned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def instance_key(fqfn: str, instance_id: int) -> str:
    return f"{fqfn}:{instance_id}"


def split_key(key: str) -> tuple[str, int]:
    fqfn, _, instance_id = key.rpartition(":")
    return fqfn, int(instance_id)


def assign(instances: Iterable[str], workers: Iterable[str],
           current: Mapping[str, str]) -> dict[str, str]:
    live = sorted(set(workers))
    if not live:
        return {}
    wanted = sorted(set(instances))
    result = {key: current[key] for key in wanted if current.get(key) in live}
    load = {worker: 0 for worker in live}
    for worker in result.values():
        load[worker] += 1
    for key in wanted:
        if key not in result:
            worker = min(live, key=lambda w: (load[w], w))
            result[key] = worker
            load[worker] += 1
    return result
