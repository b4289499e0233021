"""Namespace bundles and their ownership by brokers."""
