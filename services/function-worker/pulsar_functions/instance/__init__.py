"""One instance of a user function: `pulsar function-instance` (see runner.py)."""
