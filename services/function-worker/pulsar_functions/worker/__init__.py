"""The functions worker: `pulsar functions-worker` (see service.py)."""
