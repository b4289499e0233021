"""Errors of the metadata store, shared by all its backends."""

from __future__ import annotations

from pulsar_common import errors


class MetadataStoreError(errors.PulsarError):
    """Any failure of the metadata store."""


class BadVersionError(MetadataStoreError):
    """A compare-and-set failed: the key's version is not the one expected (or it exists already)."""


class NotFoundError(MetadataStoreError):
    """The key does not exist."""


class AlreadyExistsError(BadVersionError):
    """A create-if-absent found the key already there."""


class SessionLostError(MetadataStoreError):
    """The store session that owned ephemeral keys is gone; those keys have vanished."""


class StoreClosedError(MetadataStoreError):
    """The store was closed."""


class StoreUnavailableError(MetadataStoreError):
    """The backend could not be reached; the call may succeed later."""

    retriable = True


class InvalidPathError(MetadataStoreError):
    """A metadata path is not absolute or has an empty segment."""


class WatchLostError(MetadataStoreError):
    """A watch missed notifications (its consumer fell behind, or the history it needed
    was compacted away); re-read what it covered and open a new watch."""

    retriable = True
