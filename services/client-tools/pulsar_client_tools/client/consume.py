"""`pulsar-client consume`: subscribe, print each message the way Apache's tool does, and ack it."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

import pulsar

from pulsar_client_tools.client import connection, rate

MESSAGE_BOUNDARY = "----- got message -----"
RECEIVE_POLL_MS = 500
"""Receive in slices so that Ctrl-C is noticed while the topic is idle."""

SUBSCRIPTION_TYPES = {
    "Exclusive": pulsar.ConsumerType.Exclusive,
    "Shared": pulsar.ConsumerType.Shared,
    "Failover": pulsar.ConsumerType.Failover,
    "Key_Shared": pulsar.ConsumerType.KeyShared,
}
POSITIONS = {
    "Latest": pulsar.InitialPosition.Latest,
    "Earliest": pulsar.InitialPosition.Earliest,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", help="topic name, e.g. persistent://public/default/my-topic "
                        "(a regular expression over topic names with --regex)")
    parser.add_argument("-s", "--subscription-name", required=True, help="subscription name")
    parser.add_argument("--regex", action="store_true",
                        help="the topic is a pattern: subscribe to every matching topic of the "
                             "namespace, e.g. persistent://public/default/orders-.*")
    parser.add_argument(
        "-t",
        "--subscription-type",
        choices=list(SUBSCRIPTION_TYPES),
        default="Exclusive",
        help="subscription type (default Exclusive)",
    )
    parser.add_argument(
        "-n",
        "--num-messages",
        type=int,
        default=1,
        help="messages to consume; 0 consumes forever (default 1)",
    )
    parser.add_argument(
        "-p",
        "--subscription-position",
        choices=list(POSITIONS),
        default="Latest",
        help="where a new subscription starts (default Latest)",
    )
    parser.add_argument(
        "-r",
        "--rate",
        type=float,
        default=0.0,
        help="messages per second; 0 consumes as fast as possible (default 0)",
    )
    parser.add_argument("--hex", action="store_true", help="print the content as a hex dump")
    parser.add_argument("--hide-content", action="store_true",
                        help="do not print the messages, only how many were consumed")
    parser.add_argument(
        "-q", "--queue-size", type=int, default=1000, help="receiver queue size (default 1000)"
    )


def describe(message: pulsar.Message, hex_dump: bool = False) -> str:
    """One line in Apache's format: key:[k], properties:[a=b, c=d], content:..."""
    key = message.partition_key() or "null"
    properties = ", ".join(f"{name}={value}" for name, value in message.properties().items())
    data = message.data()
    content = _hex_dump(data) if hex_dump else data.decode("utf-8", errors="replace")
    return f"key:[{key}], properties:[{properties}], content:{content}"


def _hex_dump(data: bytes) -> str:
    rows = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        rows.append(f"{offset:08x}  {chunk.hex(' '):<47}  |{text}|")
    return "\n" + "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    client = connection.client_from_args(args)
    try:
        consumer = client.subscribe(
            re.compile(args.topic) if args.regex else args.topic,
            args.subscription_name,
            consumer_type=SUBSCRIPTION_TYPES[args.subscription_type],
            initial_position=POSITIONS[args.subscription_position],
            receiver_queue_size=args.queue_size,
        )
        try:
            consumed = consume(
                consumer,
                args.num_messages,
                args.rate,
                (lambda m: None) if args.hide_content
                else lambda m: print(MESSAGE_BOUNDARY + "\n" + describe(m, args.hex), flush=True),
            )
        finally:
            consumer.close()
    finally:
        client.close()
    print(f"{consumed} messages successfully consumed", flush=True)
    return 0


def consume(
    consumer: pulsar.Consumer,
    num_messages: int,
    rate_per_s: float,
    show: Callable[[pulsar.Message], None],
) -> int:
    """Receive up to `num_messages` (0 = until interrupted), show and acknowledge each one."""
    limiter = rate.RateLimiter(rate_per_s)
    consumed = 0
    try:
        while num_messages <= 0 or consumed < num_messages:
            limiter.acquire()
            message = _receive(consumer)
            show(message)
            # Counted as soon as it is shown, so Ctrl-C during the acknowledgement still
            # reports every message the user saw.
            consumed += 1
            consumer.acknowledge(message)
    except KeyboardInterrupt:
        pass
    return consumed


def _receive(consumer: pulsar.Consumer) -> pulsar.Message:
    while True:
        try:
            return consumer.receive(RECEIVE_POLL_MS)
        except pulsar.Timeout:
            continue
