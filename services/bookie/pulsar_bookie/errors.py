"""Errors of the bookie and the ledger client, with BookKeeper's names."""

from __future__ import annotations

from pulsar_common import errors


class BookieError(errors.PulsarError):
    """Any failure reported by a bookie or the ledger client."""


class NoSuchLedgerError(BookieError):
    """The ledger is not known (to this bookie, or to the ledger metadata)."""


class NoSuchEntryError(BookieError):
    """The entry was never written here. A bookie never says this of an entry it acknowledged."""


class LedgerFencedError(BookieError):
    """The ledger was fenced by a recovering reader: the old writer may add nothing more."""


class LedgerClosedError(BookieError):
    """The ledger is closed: it has a final last entry id and takes no adds."""


class UnauthorizedAccessError(BookieError):
    """The master key of the request does not match the ledger's."""


class MetadataVersionError(BookieError):
    """The ledger metadata was changed by someone else (compare-and-set lost)."""


class TooManyRequestsError(BookieError):
    """The bookie is over its in-progress limit; try again or try another bookie."""

    retriable = True


class BookieUnavailableError(BookieError):
    """The bookie could not be reached or is shutting down."""

    retriable = True


class NotEnoughBookiesError(BookieError):
    """Fewer writable bookies than a new ensemble (or a replacement) needs."""

    retriable = True


class CookieMismatchError(BookieError):
    """The data directories do not belong to this bookie (emptied, foreign or mixed)."""


class StorageClosedError(BookieError):
    """The storage engine was closed."""
