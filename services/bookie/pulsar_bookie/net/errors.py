"""Errors only the network transport raises; the rest are pulsar_bookie.errors."""

from __future__ import annotations

from pulsar_bookie import errors


class MalformedFrameError(errors.BookieError):
    """Bytes on a bookie connection that are not a valid frame; the connection is closed."""


class BookieReadOnlyError(errors.BookieUnavailableError):
    """The bookie is read-only (its disk is full): it serves reads but refuses adds.

    A subclass of BookieUnavailableError, so a writer treats it as a bookie it
    cannot write to and replaces it in the ensemble.
    """


class BadRequestError(errors.BookieError):
    """The bookie could not make sense of a well-framed request (a client bug)."""


class BookieServerError(errors.BookieError):
    """The bookie failed the request for a reason of its own (see its log)."""
