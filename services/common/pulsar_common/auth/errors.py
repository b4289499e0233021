"""Why a connection or request was not authenticated."""

from __future__ import annotations

from pulsar_common import errors


class AuthenticationError(errors.PulsarError):
    """The credentials do not prove a role; the message says why (sent to the client)."""
