"""Load balancing: brokers' load reports, the pure shedding and splitting planner, and the
leader broker that runs it.

Layers: `model` (records and their JSON, Apache's LocalBrokerData shape), `settings`,
`shedding` and `splitting` (pure: state in, decisions out, time as `now_ms`) are importable
without aiohttp or a metadata store, so the operator's rebalancing loop runs the same
planner. `report` (sampling this broker) and `manager` (publishing, leader election,
running rounds) are the adapters.
"""
