"""Fuzzing of the binary protocol (`make fuzz`, and the bounded tests under
services/*/tests/fuzz): hostile frames built with the wire codec, delivered to a running
broker and proxy. See docs/reliability.md."""
