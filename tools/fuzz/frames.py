"""Hostile binary-protocol input, built with the project's wire codec from a random.Random.

One generator serves both fuzzers: the bounded hypothesis tests hand it a Random that
hypothesis controls (so failures shrink and replay), the long `make fuzz` run a seeded
one. An ``Attack`` is what one connection sends after its CONNECT: a list of byte
chunks, written in order.

Kinds of attack:
- ``command``: well-framed commands of every type a client may send, each field set to a
  hostile value (limits of each integer type, empty / huge / `..` / NUL names, unknown
  enum numbers kept by proto2 as unknown fields, required fields left out);
- ``protobuf``: well-framed random bytes where the BaseCommand should be;
- ``framing``: sizes that lie (commandSize beyond totalSize, totalSize below 4, a frame
  far over the limit), frames cut short before the connection closes;
- ``payload``: SEND frames with a bad magic, a checksum that does not match, a metadata
  size pointing past the end, random metadata, hostile batch counts;
- ``sequence``: a plausible interleaving (producer, sends, flow, acks, seeks, closes on
  ids that exist or not) with hostile values mixed in.
"""

from __future__ import annotations

import dataclasses
import random
import struct

from google.protobuf import descriptor
from google.protobuf import message as pb_message
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

#: Commands a client sends (the broker must cope with any of them at any time).
CLIENT_COMMANDS = (
    pb.BaseCommand.CONNECT, pb.BaseCommand.SUBSCRIBE, pb.BaseCommand.PRODUCER,
    pb.BaseCommand.SEND, pb.BaseCommand.ACK, pb.BaseCommand.FLOW, pb.BaseCommand.UNSUBSCRIBE,
    pb.BaseCommand.CLOSE_PRODUCER, pb.BaseCommand.CLOSE_CONSUMER, pb.BaseCommand.PING,
    pb.BaseCommand.PONG, pb.BaseCommand.REDELIVER_UNACKNOWLEDGED_MESSAGES,
    pb.BaseCommand.PARTITIONED_METADATA, pb.BaseCommand.LOOKUP, pb.BaseCommand.CONSUMER_STATS,
    pb.BaseCommand.SEEK, pb.BaseCommand.GET_LAST_MESSAGE_ID,
    pb.BaseCommand.GET_TOPICS_OF_NAMESPACE, pb.BaseCommand.GET_SCHEMA,
    pb.BaseCommand.AUTH_RESPONSE, pb.BaseCommand.GET_OR_CREATE_SCHEMA,
    pb.BaseCommand.NEW_TXN, pb.BaseCommand.ADD_PARTITION_TO_TXN,
    pb.BaseCommand.ADD_SUBSCRIPTION_TO_TXN, pb.BaseCommand.END_TXN,
    pb.BaseCommand.WATCH_TOPIC_LIST, pb.BaseCommand.WATCH_TOPIC_LIST_CLOSE,
    pb.BaseCommand.TC_CLIENT_CONNECT_REQUEST,
)

#: Values an integer field gets: each type's limits and the ones around them.
HOSTILE_INTS = (0, 1, -1, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**63 - 1, -(2**63),
                2**64 - 1, 1000, 10**9)

#: Topic-ish and other names: empty, traversal, NUL, huge, wrong domain, partition overflow.
HOSTILE_STRINGS = (
    "", ".", "..", "\x00", "a" * 5000, "persistent://public/default/..",
    "persistent://public/../x", "persistent://public/default/t-partition-99999999999",
    "persistent://public/default/t-partition--1", "non-persistent://public/default/x",
    "persistent://" + "p" * 300 + "/default/x", "persistent://public/default/" + "é" * 100,
    "public/default", "persistent:///default/x", "persistent://public/default/%2e%2e",
    "persistent://pulsar/system/x", "persistent://public/default/fuzz",
)

#: Fuzz topics live here so that their data is easy to tell apart.
FUZZ_TOPIC_PREFIX = "persistent://public/default/fuzz-"


@dataclasses.dataclass(frozen=True)
class Attack:
    kind: str
    chunks: tuple[bytes, ...]

    @property
    def frames(self) -> int:
        return len(self.chunks)


def connect_frame(client_version: str = "fuzz", protocol_version: int = 20,
                  proxy_to_broker_url: str = "") -> bytes:
    command = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
    command.connect.client_version = client_version
    command.connect.protocol_version = protocol_version
    if proxy_to_broker_url:
        command.connect.proxy_to_broker_url = proxy_to_broker_url
    return frame.encode_command(command)


def attack(rng: random.Random) -> Attack:
    kind = rng.choice(("command", "command", "protobuf", "framing", "payload", "sequence"))
    builder = {"command": _commands, "protobuf": _protobuf, "framing": _framing,
               "payload": _payload, "sequence": _sequence}[kind]
    return Attack(kind, tuple(builder(rng)))


# ----- hostile values -----

def _int(rng: random.Random, field: descriptor.FieldDescriptor) -> int:
    value = rng.choice(HOSTILE_INTS) if rng.random() < 0.7 else rng.randrange(0, 100)
    bits = {descriptor.FieldDescriptor.TYPE_INT32: 32, descriptor.FieldDescriptor.TYPE_SINT32: 32,
            descriptor.FieldDescriptor.TYPE_SFIXED32: 32}.get(field.type)
    if bits is not None:
        return _wrap_signed(value, 32)
    if field.type in (descriptor.FieldDescriptor.TYPE_UINT32,
                      descriptor.FieldDescriptor.TYPE_FIXED32):
        return value % 2**32
    if field.type in (descriptor.FieldDescriptor.TYPE_UINT64,
                      descriptor.FieldDescriptor.TYPE_FIXED64):
        return value % 2**64
    return _wrap_signed(value, 64)


def _wrap_signed(value: int, bits: int) -> int:
    value %= 2**bits
    return value - 2**bits if value >= 2 ** (bits - 1) else value


def _string(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return f"{FUZZ_TOPIC_PREFIX}{rng.randrange(4)}"
    if rng.random() < 0.8:
        return rng.choice(HOSTILE_STRINGS)
    return "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(rng.randrange(0, 40)))


def _bytes(rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice((0, 1, 16, 300, 4096)))


def fill(rng: random.Random, message: pb_message.Message, depth: int = 0) -> None:
    """Set a random subset of message's fields (recursively, bounded) to hostile values."""
    fields = message.DESCRIPTOR.fields
    for field in fields:
        if rng.random() < 0.6:
            continue
        repeated = field.is_repeated
        count = rng.choice((1, 2, 5)) if repeated else 1
        for _ in range(count):
            _set(rng, message, field, repeated, depth)


def _set(rng: random.Random, message: pb_message.Message, field: descriptor.FieldDescriptor,
         repeated: bool, depth: int) -> None:
    target = getattr(message, field.name)
    if field.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
        if depth >= 3:
            return
        child = target.add() if repeated else target
        fill(rng, child, depth + 1)
        if not repeated and not child.ListFields():
            child.SetInParent()
        return
    value: object
    if field.type == descriptor.FieldDescriptor.TYPE_STRING:
        value = _string(rng)
    elif field.type == descriptor.FieldDescriptor.TYPE_BYTES:
        value = _bytes(rng)
    elif field.type == descriptor.FieldDescriptor.TYPE_BOOL:
        value = rng.random() < 0.5
    elif field.type == descriptor.FieldDescriptor.TYPE_ENUM:
        value = rng.choice([v.number for v in field.enum_type.values])
    elif field.type in (descriptor.FieldDescriptor.TYPE_DOUBLE,
                        descriptor.FieldDescriptor.TYPE_FLOAT):
        value = rng.choice((0.0, -1.0, 1e300, float("nan"), float("inf")))
    else:
        value = _int(rng, field)
    if repeated:
        target.append(value)
    else:
        setattr(message, field.name, value)


#: Commands that close the connection whatever their values (a second CONNECT, transaction
#: commands of a broker without a transaction coordinator): drawn less often, so that most
#: examples reach the handlers behind them.
CLOSING_COMMANDS = frozenset({
    pb.BaseCommand.CONNECT, pb.BaseCommand.NEW_TXN, pb.BaseCommand.ADD_PARTITION_TO_TXN,
    pb.BaseCommand.ADD_SUBSCRIPTION_TO_TXN, pb.BaseCommand.END_TXN,
    pb.BaseCommand.TC_CLIENT_CONNECT_REQUEST, pb.BaseCommand.AUTH_RESPONSE})


def hostile_command(rng: random.Random, command_type: int | None = None) -> pb.BaseCommand:
    """A command of command_type (else a random client command): its required fields set to
    plausible values most of the time, then a random subset of fields made hostile."""
    if command_type is None:
        pool = CLIENT_COMMANDS if rng.random() < 0.15 else tuple(
            c for c in CLIENT_COMMANDS if c not in CLOSING_COMMANDS)
        command_type = rng.choice(pool)
    command = pb.BaseCommand(type=command_type)  # type: ignore[arg-type]
    body_name = pb.BaseCommand.DESCRIPTOR.fields_by_number[command_type].name
    body = getattr(command, body_name)
    if rng.random() < 0.8:
        _plausible_required(rng, body)
    fill(rng, body)
    body.SetInParent()
    return command


def _plausible_required(rng: random.Random, message: pb_message.Message) -> None:
    for field in message.DESCRIPTOR.fields:
        if not field.is_required:
            continue
        if field.type == descriptor.FieldDescriptor.TYPE_STRING:
            value: object = (f"{FUZZ_TOPIC_PREFIX}{rng.randrange(4)}" if "topic" in field.name
                             else rng.choice(("s", "fuzz", "public/default")))
        elif field.type == descriptor.FieldDescriptor.TYPE_ENUM:
            value = field.enum_type.values[0].number
        elif field.type == descriptor.FieldDescriptor.TYPE_MESSAGE:
            getattr(message, field.name).SetInParent()
            _plausible_required(rng, getattr(message, field.name))
            continue
        elif field.type == descriptor.FieldDescriptor.TYPE_BOOL:
            value = False
        elif field.type == descriptor.FieldDescriptor.TYPE_BYTES:
            value = b""
        else:
            value = rng.randrange(1, 4)
        setattr(message, field.name, value)


def encode_partial(command: pb.BaseCommand) -> bytes:
    """A simple frame even when required fields are missing (proto2 refuses to serialize
    those with SerializeToString)."""
    body: bytes = command.SerializePartialToString()
    return struct.pack(">II", len(body) + 4, len(body)) + body


def _send_frame(rng: random.Random, entry: bytes, producer_id: int = 1) -> bytes:
    command = pb.BaseCommand(type=pb.BaseCommand.SEND)
    command.send.producer_id = producer_id
    command.send.sequence_id = rng.choice((0, 1, 2**63 - 1, 2**64 - 1))
    if rng.random() < 0.3:
        command.send.num_messages = _wrap_signed(rng.choice(HOSTILE_INTS), 32)
    header, body = frame.payload_frame_parts(command, entry)
    return header + bytes(body)


# ----- attacks -----

def _commands(rng: random.Random) -> list[bytes]:
    return [encode_partial(hostile_command(rng)) for _ in range(rng.randrange(1, 6))]


def _protobuf(rng: random.Random) -> list[bytes]:
    chunks = []
    for _ in range(rng.randrange(1, 4)):
        body = rng.randbytes(rng.randrange(0, 200))
        if rng.random() < 0.5:
            # A valid type tag first, then garbage: gets past the first byte.
            body = bytes([0x08, rng.choice(CLIENT_COMMANDS)]) + body
        chunks.append(struct.pack(">II", len(body) + 4, len(body)) + body)
    return chunks


def _framing(rng: random.Random) -> list[bytes]:
    good = encode_partial(hostile_command(rng, pb.BaseCommand.PING))
    choice = rng.randrange(6)
    if choice == 0:  # commandSize beyond totalSize
        return [struct.pack(">II", 8, 1000) + b"\x08\x12\x92\x01\x00"]
    if choice == 1:  # totalSize too small to hold commandSize
        return [struct.pack(">I", rng.randrange(0, 4)) + b"\x00" * 8]
    if choice == 2:  # a frame far over the limit (only its size is sent)
        return [struct.pack(">I", frame.DEFAULT_MAX_FRAME_SIZE + rng.randrange(1, 2**30))]
    if choice == 3:  # a good frame cut short
        return [good[: rng.randrange(1, len(good))]]
    if choice == 4:  # commandSize 0
        return [struct.pack(">II", 4, 0)]
    # totalSize larger than what follows, then silence
    return [struct.pack(">II", 100, 10) + b"\x08\x12" + b"\x00" * 8]


def _payload(rng: random.Random) -> list[bytes]:
    producer = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    producer.producer.topic = f"{FUZZ_TOPIC_PREFIX}{rng.randrange(4)}"
    producer.producer.producer_id = 1
    producer.producer.request_id = 1
    chunks = [frame.encode_command(producer)]
    metadata = pb.MessageMetadata(producer_name="fuzz", sequence_id=0, publish_time=1)
    choice = rng.randrange(6)
    if choice == 0:  # random metadata bytes
        entry = frame.encode_entry(rng.randbytes(rng.randrange(0, 64)), b"x")
    elif choice == 1:  # metadataSize pointing past the end
        entry = struct.pack(">I", rng.choice((2**32 - 1, 1000, 5))) + b"\x00\x01"
    elif choice == 2:  # hostile batch count over a tiny payload
        metadata.num_messages_in_batch = _wrap_signed(rng.choice(HOSTILE_INTS), 32)
        entry = frame.encode_entry(metadata, rng.randbytes(16))
    elif choice == 3:  # hostile metadata fields
        fill(rng, metadata)
        entry = frame.encode_entry(metadata.SerializePartialToString(), rng.randbytes(8))
    else:
        entry = frame.encode_entry(metadata, b"payload")
    send = _send_frame(rng, entry)
    if choice == 4:  # bad magic
        send = send.replace(b"\x0e\x01", b"\x0e\x07", 1)
    elif choice == 5:  # checksum that does not match
        at = send.index(b"\x0e\x01") + 2
        send = send[:at] + bytes(b ^ 0xFF for b in send[at:at + 4]) + send[at + 4:]
    chunks.append(send)
    return chunks


def _sequence(rng: random.Random) -> list[bytes]:
    topic = f"{FUZZ_TOPIC_PREFIX}{rng.randrange(4)}"
    opening = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    opening.producer.topic = topic
    opening.producer.producer_id = 1
    opening.producer.request_id = 1
    chunks = [frame.encode_command(opening)]
    request_id = 1
    for _ in range(rng.randrange(2, 10)):
        request_id += 1
        step = rng.randrange(8)
        command: pb.BaseCommand
        if step == 0:
            command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
            command.producer.topic = topic
            command.producer.producer_id = rng.randrange(3)
            command.producer.request_id = request_id
        elif step == 1:
            command = pb.BaseCommand(type=pb.BaseCommand.SUBSCRIBE)
            command.subscribe.topic = topic
            command.subscribe.subscription = rng.choice(("s", "t", "..", ""))
            command.subscribe.subType = rng.choice((0, 1, 2, 3))  # type: ignore[assignment]
            command.subscribe.consumer_id = rng.randrange(3)
            command.subscribe.request_id = request_id
        elif step == 2:
            command = pb.BaseCommand(type=pb.BaseCommand.FLOW)
            command.flow.consumer_id = rng.randrange(3)
            command.flow.messagePermits = rng.choice((0, 1, 2**32 - 1))
        elif step == 3:
            metadata = pb.MessageMetadata(producer_name="fuzz", sequence_id=0, publish_time=1)
            chunks.append(_send_frame(rng, frame.encode_entry(metadata, b"x"),
                                      producer_id=1 if rng.random() < 0.8 else 2))
            continue
        else:
            command = hostile_command(rng, rng.choice((
                pb.BaseCommand.ACK, pb.BaseCommand.SEEK, pb.BaseCommand.CLOSE_PRODUCER,
                pb.BaseCommand.CLOSE_CONSUMER, pb.BaseCommand.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                pb.BaseCommand.GET_LAST_MESSAGE_ID, pb.BaseCommand.UNSUBSCRIBE)))
        chunks.append(encode_partial(command))
    return chunks
