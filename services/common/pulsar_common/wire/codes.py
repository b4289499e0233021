"""Protocol error codes and versions as Python enums, plus version negotiation.

The values mirror ``ServerError`` and ``ProtocolVersion`` in pulsar_api.proto
(a test keeps them in step); typed enums read better in broker code than the
generated integer constants and can be passed wherever those are expected.
"""

from __future__ import annotations

import enum


class ServerError(enum.IntEnum):
    UnknownError = 0
    MetadataError = 1
    PersistenceError = 2
    AuthenticationError = 3
    AuthorizationError = 4
    ConsumerBusy = 5
    ServiceNotReady = 6
    ProducerBlockedQuotaExceededError = 7
    ProducerBlockedQuotaExceededException = 8
    ChecksumError = 9
    UnsupportedVersionError = 10
    TopicNotFound = 11
    SubscriptionNotFound = 12
    ConsumerNotFound = 13
    TooManyRequests = 14
    TopicTerminatedError = 15
    ProducerBusy = 16
    InvalidTopicName = 17
    IncompatibleSchema = 18
    ConsumerAssignError = 19
    TransactionCoordinatorNotFound = 20
    InvalidTxnStatus = 21
    NotAllowedError = 22
    TransactionConflict = 23
    TransactionNotFound = 24
    ProducerFenced = 25


class ProtocolVersion(enum.IntEnum):
    """Versions that changed what a broker may send; the rest are plain numbers."""

    CHECKSUM = 6  # MESSAGE frames carry magic + CRC32C
    LOOKUP = 7
    END_OF_TOPIC = 9
    LAST_MESSAGE_ID = 12  # also ACTIVE_CONSUMER_CHANGE and GET_TOPICS_OF_NAMESPACE
    AUTH_CHALLENGE = 14  # also Key_Shared
    GET_OR_CREATE_SCHEMA = 15
    BROKER_ENTRY_METADATA = 16
    ACK_RECEIPT = 17
    TOPIC_MIGRATED = 20
    LATEST = 21  # the highest version pulsar_api.proto describes


def negotiate(client_version: int) -> int:
    """The version both sides speak: the lower of the client's and ours."""
    return max(0, min(client_version, ProtocolVersion.LATEST))


def supports_checksum(version: int) -> bool:
    return version >= ProtocolVersion.CHECKSUM
