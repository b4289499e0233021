"""Builders of the commands the broker sends, as BaseCommand messages."""

from __future__ import annotations

from pulsar_common import naming
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import errors as ml_errors

T = pb.BaseCommand

SERVER_VERSION = "pulsar-py 0.1.0"
#: Highest protocol version this broker speaks.
PROTOCOL_VERSION = 20


def base(command_type: int) -> pb.BaseCommand:
    command = pb.BaseCommand()
    command.type = command_type  # type: ignore[assignment]
    return command


def connected(client_version: int, max_message_size: int) -> pb.BaseCommand:
    command = base(T.CONNECTED)
    command.connected.server_version = SERVER_VERSION
    command.connected.protocol_version = min(client_version, PROTOCOL_VERSION)
    command.connected.max_message_size = max_message_size
    return command


def success(request_id: int) -> pb.BaseCommand:
    command = base(T.SUCCESS)
    command.success.request_id = request_id
    return command


def error(request_id: int, code: int, message: str) -> pb.BaseCommand:
    command = base(T.ERROR)
    command.error.request_id = request_id
    command.error.error = code  # type: ignore[assignment]
    command.error.message = message
    return command


def server_error_of(exc: BaseException) -> int:
    """The ServerError code the client understands best for a broker exception."""
    from pulsar_broker.subscriptions import subscription

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
    (errors.TopicNotFoundError, pb.TopicNotFound),
    (errors.NotFoundError, pb.TopicNotFound),
    (errors.NotAllowedError, pb.NotAllowedError),
    (errors.ServiceNotReadyError, pb.ServiceNotReady),
    (naming.InvalidTopicNameError, pb.InvalidTopicName),
]


def message_id(position: ml.Position, partition: int = -1) -> pb.MessageIdData:
    data = pb.MessageIdData()
    data.ledgerId = position.ledger_id & 0xFFFFFFFFFFFFFFFF
    data.entryId = position.entry_id & 0xFFFFFFFFFFFFFFFF
    if partition >= 0:
        data.partition = partition
    return data


def position_of(data: pb.MessageIdData) -> ml.Position:
    """Client ids carry ledger/entry as uint64; -1 arrives as 2**64-1."""
    ledger, entry = data.ledgerId, data.entryId
    if ledger >= 2**63:
        ledger -= 2**64
    if entry >= 2**63:
        entry -= 2**64
    return ml.Position(ledger, entry)
