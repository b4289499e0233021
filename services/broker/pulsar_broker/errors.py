"""Errors of the broker, each carrying the HTTP status the admin API answers with."""

from __future__ import annotations

from pulsar_common import errors


class BrokerError(errors.PulsarError):
    http_status = 500


class NotFoundError(BrokerError):
    http_status = 404


class ConflictError(BrokerError):
    http_status = 409


class PreconditionFailedError(BrokerError):
    """The thing still has children (a namespace with topics, a tenant with namespaces)."""

    http_status = 412


class InvalidRequestError(BrokerError):
    http_status = 400


class NotAllowedError(BrokerError):
    http_status = 405


class TopicNotFoundError(NotFoundError):
    pass


class ServiceNotReadyError(BrokerError):
    http_status = 503
    retriable = True


class BundleOwnedElsewhereError(ServiceNotReadyError):
    """The topic's namespace bundle is served by another broker: binary clients are told
    ServiceNotReady (they look the topic up again); the admin API redirects to the owner."""

    def __init__(self, message: str, owner_native_url: str, owner_http_url: str) -> None:
        super().__init__(message)
        self.owner_native_url = owner_native_url
        self.owner_http_url = owner_http_url
