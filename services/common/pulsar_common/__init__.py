"""Pieces every service shares: wire codec, metadata store, naming, config, errors."""
