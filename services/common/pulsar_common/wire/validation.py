"""Cheap checks that an entry is something every official client can read.

A broker stores what producers send without decoding payloads, but some
entries it can tell are broken, and storing them harms others: metadata that
is not a valid `MessageMetadata` makes the C++ client drop its connection on
every delivery. `check_entry` (on SEND) and `check_metadata` (on dispatch, for
entries stored before these checks) raise `MetadataParseError` with the reason.
"""

from __future__ import annotations

from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb


def check_entry(entry: frame.Buffer) -> pb.MessageMetadata:
    """The entry's metadata, after checking that clients can read the entry; raises
    MetadataParseError otherwise."""
    return check_metadata(entry)


def check_metadata(entry: frame.Buffer) -> pb.MessageMetadata:
    """The entry's metadata, checked without reading the payload: it parses and has its
    required fields."""
    return wire_entry.parse_entry_metadata(entry)
