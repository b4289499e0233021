"""Errors raised while decoding Pulsar frames and payloads.

Every decode error means "this peer sent bytes we cannot trust": the caller
closes that one connection (or rejects that one entry) and nobody else is
affected. A checksum mismatch on SEND is *not* an exception: the decoder
reports it on the frame, because the broker answers it with SEND_ERROR
ChecksumError and keeps the connection.
"""

from __future__ import annotations

from pulsar_common import errors


class WireError(errors.PulsarError):
    """Root of the protocol codec's errors."""


class FrameTooLargeError(WireError):
    """A frame announced a size above the configured limit."""

    def __init__(self, frame_size: int, max_frame_size: int) -> None:
        super().__init__(f"frame of {frame_size} bytes exceeds the limit of {max_frame_size}")
        self.frame_size = frame_size
        self.max_frame_size = max_frame_size


class MalformedFrameError(WireError):
    """Sizes inside a frame are inconsistent, or a section is cut short."""


class CommandParseError(MalformedFrameError):
    """The BaseCommand bytes are not a valid protobuf message."""


class UnknownCommandError(MalformedFrameError):
    """The BaseCommand type is not one this codec knows."""

    def __init__(self, command_type: int) -> None:
        super().__init__(f"unknown command type {command_type}")
        self.command_type = command_type


class MissingCommandBodyError(MalformedFrameError):
    """The BaseCommand type names a body field that is absent."""


class MetadataParseError(WireError):
    """Stored or received MessageMetadata could not be parsed."""


class BatchFormatError(WireError):
    """A batch payload does not hold the messages its metadata announces."""


class EncryptedPayloadError(WireError):
    """The payload is encrypted: only the consumer with the key can read it."""


class CompressionUnavailableError(WireError):
    """The codec needed to decompress a payload is not installed."""


class DecompressionError(WireError):
    """A compressed payload could not be decompressed to its announced size."""
