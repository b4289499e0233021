"""Errors of the managed ledger and its cursors, with Pulsar's names."""

from __future__ import annotations

from pulsar_common import errors


class ManagedLedgerError(errors.PulsarError):
    """Any failure of a managed ledger or one of its cursors."""


class ManagedLedgerFencedError(ManagedLedgerError):
    """Someone else changed this managed ledger's metadata or fenced its ledger.

    Another broker owns the topic now; this instance writes nothing more.
    """


class ManagedLedgerClosedError(ManagedLedgerError):
    """The managed ledger was closed."""


class ManagedLedgerTerminatedError(ManagedLedgerError):
    """The managed ledger was terminated: it takes no more entries."""


class NoMoreEntriesToReadError(ManagedLedgerTerminatedError):
    """The managed ledger is terminated and the cursor has read every entry."""


class MetadataVersionError(ManagedLedgerFencedError):
    """A compare-and-set of managed-ledger or cursor metadata lost to another writer."""


class ManagedLedgerNotFoundError(ManagedLedgerError):
    """No managed ledger exists under that name."""


class CursorAlreadyClosedError(ManagedLedgerError):
    """The cursor was closed (or deleted) and takes no more calls."""


class CursorNotFoundError(ManagedLedgerError):
    """No cursor exists under that name."""


class InvalidCursorPositionError(ManagedLedgerError):
    """The position is not one this managed ledger holds (past its end, for example)."""


class NonRecoverableLedgerError(ManagedLedgerError):
    """An entry that should exist could not be read from its ledger."""


class ManagedLedgerWriteError(ManagedLedgerError):
    """Writing the entry to the current ledger failed; later entries go to a new ledger."""

    retriable = True


class EntryNotFoundError(ManagedLedgerError):
    """No entry is stored at that position (never written, or its ledger was trimmed)."""


class TooManyPendingAddsError(ManagedLedgerError):
    """Too many adds wait for this managed ledger; try again shortly."""

    retriable = True
