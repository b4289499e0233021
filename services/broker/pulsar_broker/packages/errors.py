"""Errors of packages management, with the HTTP status the admin API answers each with."""

from __future__ import annotations

from pulsar_broker import errors


class PackagesError(errors.BrokerError):
    """Root of the packages management errors."""


class InvalidPackageNameError(PackagesError):
    """A type, tenant, namespace, name or version that is not a package name part (Apache: 412)."""

    http_status = 412


class PackageNotFoundError(PackagesError):
    http_status = 404


class PackageExistsError(PackagesError):
    """A version is written once; Apache answers 404 here, pulsar-py 409 Conflict."""

    http_status = 409


class PackageTooLargeError(PackagesError):
    http_status = 413


class InvalidPackageMetadataError(PackagesError):
    http_status = 400


class PackagesDisabledError(PackagesError):
    """enablePackagesManagement is false, or the broker has no ledger client."""

    http_status = 503


class PackageCorruptError(PackagesError):
    """The stored bytes do not match the size or checksum recorded at upload."""
