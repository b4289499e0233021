"""Errors of the Spark data source, under one root so callers can catch them together.

Messages are written for the analyst who typed the query: they name the
option, topic or ledger at fault and what to do about it.
"""

from __future__ import annotations


class PulsarSparkError(Exception):
    """Root of every error this package raises."""

    retriable = False


class OptionError(PulsarSparkError, ValueError):
    """A data source option is missing, unknown or malformed."""


class TopicNotFoundError(PulsarSparkError):
    """The topic (or namespace) does not exist on the cluster."""


class DataLossError(PulsarSparkError):
    """Requested messages were deleted by retention (failOnDataLoss=true)."""


class AdminApiError(PulsarSparkError):
    """The admin REST API answered with an error or could not be reached."""

    retriable = True


class LedgerMetadataError(PulsarSparkError):
    """A ledger's metadata (its bookies) could not be found."""


class EntryReadError(PulsarSparkError):
    """Entries could not be read from the bookies."""

    retriable = True


class SchemaError(PulsarSparkError):
    """The `schema` option is not a usable schema, or a payload does not match it."""
