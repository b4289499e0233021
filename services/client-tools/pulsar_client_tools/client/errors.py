"""Errors of the command-line clients: a bad option or an operation the broker refused."""

from __future__ import annotations

from pulsar_common import errors


class CliError(errors.PulsarError):
    """The command cannot run as asked; the message is shown to the user, exit code 1."""


class UsageError(CliError):
    """Options that parse but do not make sense together (no message to send, bad k=v)."""
