"""`pulsar-client read`: read a topic from a message id with a reader (no subscription kept).

As Apache's: `-m/--start-message-id` is `latest` (the default), `earliest`
or `ledgerId:entryId[:partition[:batchIndex]]`; `-i` includes that message;
messages print in `consume`'s format; nothing is acknowledged.
"""

from __future__ import annotations

import argparse

import pulsar

from pulsar_client_tools.client import connection, consume, errors, rate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", help="topic name, e.g. persistent://public/default/my-topic")
    parser.add_argument("-m", "--start-message-id", default="latest",
                        help="latest (default), earliest or ledgerId:entryId[:partition[:batch]]")
    parser.add_argument("-i", "--start-message-id-inclusive", action="store_true",
                        help="include the message at --start-message-id")
    parser.add_argument("-n", "--num-messages", type=int, default=1,
                        help="messages to read; 0 reads forever (default 1)")
    parser.add_argument("-r", "--rate", type=float, default=0.0,
                        help="messages per second; 0 reads as fast as possible (default 0)")
    parser.add_argument("--hex", action="store_true", help="print the content as a hex dump")
    parser.add_argument("--hide-content", action="store_true",
                        help="do not print the messages, only how many were read")
    parser.add_argument("-q", "--queue-size", type=int, default=1000,
                        help="receiver queue size (default 1000)")


def parse_message_id(text: str) -> pulsar.MessageId:
    lowered = text.strip().lower()
    if lowered == "latest":
        return pulsar.MessageId.latest
    if lowered == "earliest":
        return pulsar.MessageId.earliest
    parts = text.split(":")
    try:
        numbers = [int(part) for part in parts]
    except ValueError:
        numbers = []
    if not 2 <= len(numbers) <= 4:
        raise errors.CliError(
            f"invalid --start-message-id {text!r}: use latest, earliest or "
            "ledgerId:entryId[:partition[:batchIndex]]")
    ledger_id, entry_id = numbers[0], numbers[1]
    partition = numbers[2] if len(numbers) > 2 else -1
    batch_index = numbers[3] if len(numbers) > 3 else -1
    return pulsar.MessageId(partition, ledger_id, entry_id, batch_index)


def run(args: argparse.Namespace) -> int:
    start = parse_message_id(args.start_message_id)
    client = connection.client_from_args(args)
    read = 0
    try:
        reader = client.create_reader(
            args.topic, start, receiver_queue_size=args.queue_size,
            start_message_id_inclusive=args.start_message_id_inclusive)
        try:
            limiter = rate.RateLimiter(args.rate)
            while args.num_messages <= 0 or read < args.num_messages:
                limiter.acquire()
                message = _next(reader)
                if not args.hide_content:
                    print(consume.MESSAGE_BOUNDARY + "\n" + consume.describe(message, args.hex),
                          flush=True)
                read += 1
        except KeyboardInterrupt:
            pass
        finally:
            reader.close()
    finally:
        client.close()
    print(f"{read} messages successfully read", flush=True)
    return 0


def _next(reader: pulsar.Reader) -> pulsar.Message:
    while True:
        try:
            return reader.read_next(consume.RECEIVE_POLL_MS)
        except pulsar.Timeout:
            continue
