"""What the broker adds to the wire package's command constructors: its version, the
ServerError code for each of its exceptions, and client message ids as positions."""

from __future__ import annotations

from pulsar_common import naming
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import errors as ml_errors
from pulsar_broker.namespace import listeners
from pulsar_broker.security import authorization as authz
from pulsar_broker.subscriptions import subscription
from pulsar_broker.topics import producer_access

T = pb.BaseCommand

SERVER_VERSION = "pulsar-py 0.1.0"
#: Highest protocol version this broker speaks.
PROTOCOL_VERSION = 20


def server_error_of(exc: BaseException) -> int:
    """The ServerError code the client understands best for a broker exception."""
    for kind, code in _ERROR_CODES:
        if isinstance(exc, kind):
            return code
    if isinstance(exc, subscription.ConsumerBusyError | subscription.SubscriptionTypeMismatchError):
        return pb.ConsumerBusy
    return pb.UnknownError


_ERROR_CODES: list[tuple[type[BaseException], int]] = [
    (ml_errors.ManagedLedgerTerminatedError, pb.TopicTerminatedError),
    (ml_errors.ManagedLedgerFencedError, pb.ServiceNotReady),
    (ml_errors.ManagedLedgerClosedError, pb.ServiceNotReady),
    (ml_errors.ManagedLedgerError, pb.PersistenceError),
    (producer_access.ProducerBusyError, pb.ProducerBusy),
    (producer_access.ProducerFencedError, pb.ProducerFenced),
    (listeners.ListenerNotFoundError, pb.ServiceNotReady),
    (authz.AuthorizationError, pb.AuthorizationError),
    (errors.TopicNotFoundError, pb.TopicNotFound),
    (errors.NotFoundError, pb.TopicNotFound),
    (errors.NotAllowedError, pb.NotAllowedError),
    (errors.ServiceNotReadyError, pb.ServiceNotReady),
    (naming.InvalidTopicNameError, pb.InvalidTopicName),
]


def position_of(data: pb.MessageIdData) -> ml.Position:
    """Client ids carry ledger/entry as uint64; -1 arrives as 2**64-1."""
    ledger, entry = data.ledgerId, data.entryId
    if ledger >= 2**63:
        ledger -= 2**64
    if entry >= 2**63:
        entry -= 2**64
    return ml.Position(ledger, entry)
