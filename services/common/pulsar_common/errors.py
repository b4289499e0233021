"""Root of the exceptions raised by pulsar_common, with a retriable flag callers can act on."""

from __future__ import annotations


class PulsarError(Exception):
    """Base of every error this project raises on purpose."""

    retriable: bool = False


class ConfigError(PulsarError):
    """A configuration file or command-line option is invalid."""
