"""`pulsar-perf`: load generators for produce and consume with rates and latency percentiles."""
