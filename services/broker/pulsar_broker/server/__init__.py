"""The binary-protocol side of the broker: listener and per-connection command handling."""
