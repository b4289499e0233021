"""Root of the exceptions raised by pulsar_common, with a retriable flag callers can act on."""

from __future__ import annotations


class PulsarError(Exception):
    """Base of every error this project raises on purpose."""

    retriable: bool = False


def is_retriable(exc: BaseException) -> bool:
    """Whether the same call may succeed later: our errors say so with their `retriable`
    flag; a timeout or a broken connection is retriable by nature."""
    if isinstance(exc, PulsarError):
        return exc.retriable
    return isinstance(exc, TimeoutError | ConnectionError)


class ConfigError(PulsarError):
    """A configuration file or command-line option is invalid."""
