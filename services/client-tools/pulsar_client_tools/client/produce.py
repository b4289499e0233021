"""`pulsar-client produce`: send the given messages (or files) to a topic, N times, at a rate."""

from __future__ import annotations

import argparse
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass

import pulsar

from pulsar_client_tools.client import connection, errors, rate


@dataclass(frozen=True)
class ProduceRequest:
    """What to send: the payloads in order, repeated `num_produce` times, with one key and properties."""

    topic: str
    payloads: tuple[bytes, ...]
    num_produce: int
    rate_per_s: float
    key: str | None
    properties: dict[str, str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", help="topic name, e.g. persistent://public/default/my-topic")
    parser.add_argument(
        "-m",
        "--messages",
        action="append",
        default=[],
        help="message to send; repeat the option for several messages "
        "(each value is also split on --separator)",
    )
    parser.add_argument(
        "-f",
        "--files",
        action="append",
        default=[],
        help="file whose whole content is sent as one message; repeatable",
    )
    parser.add_argument(
        "-n",
        "--num-produce",
        type=int,
        default=1,
        help="how many times to send the messages (default 1)",
    )
    parser.add_argument(
        "-r",
        "--rate",
        type=float,
        default=0.0,
        help="messages per second; 0 sends as fast as possible (default 0)",
    )
    parser.add_argument("-k", "--key", help="partitioning key of every message")
    parser.add_argument(
        "-p",
        "--properties",
        action="append",
        default=[],
        help="message property key=value; repeatable, or comma separated",
    )
    parser.add_argument(
        "-s",
        "--separator",
        default=",",
        help="separator splitting -m values into messages (default ','); "
        "an empty string disables splitting",
    )
    parser.add_argument(
        "-db", "--disable-batching", action="store_true", help="send every message in its own entry"
    )


def parse_properties(values: Sequence[str]) -> dict[str, str]:
    properties: dict[str, str] = {}
    for value in values:
        for item in filter(None, value.split(",")):
            name, sep, content = item.partition("=")
            if not sep or not name:
                raise errors.UsageError(f"property {item!r} is not of the form key=value")
            properties[name] = content
    return properties


def _payloads(messages: Sequence[str], files: Sequence[str], separator: str) -> tuple[bytes, ...]:
    texts: list[str] = []
    for message in messages:
        texts.extend(message.split(separator) if separator else [message])
    payloads = [text.encode() for text in texts]
    for name in files:
        try:
            payloads.append(pathlib.Path(name).read_bytes())
        except OSError as exc:
            raise errors.UsageError(f"cannot read {name}: {exc.strerror}") from exc
    return tuple(payloads)


def request_from(args: argparse.Namespace) -> ProduceRequest:
    payloads = _payloads(args.messages, args.files, args.separator)
    if not payloads:
        raise errors.UsageError("nothing to send: give messages with -m or files with -f")
    if args.num_produce < 1:
        raise errors.UsageError("--num-produce must be at least 1")
    return ProduceRequest(
        topic=args.topic,
        payloads=payloads,
        num_produce=args.num_produce,
        rate_per_s=args.rate,
        key=args.key,
        properties=parse_properties(args.properties),
    )


def run(args: argparse.Namespace) -> int:
    request = request_from(args)
    client = connection.client_from_args(args)
    try:
        sent = produce(client, request, batching=not args.disable_batching)
    finally:
        client.close()
    print(f"{sent} messages successfully produced", flush=True)
    return 0


def produce(client: pulsar.Client, request: ProduceRequest, batching: bool) -> int:
    """Send every payload `num_produce` times, waiting for each receipt; returns the count sent."""
    producer = client.create_producer(
        request.topic, batching_enabled=batching, batching_max_publish_delay_ms=1
    )
    limiter = rate.RateLimiter(request.rate_per_s)
    sent = 0
    try:
        for _ in range(request.num_produce):
            for payload in request.payloads:
                limiter.acquire()
                producer.send(
                    payload, properties=request.properties or None, partition_key=request.key
                )
                sent += 1
    finally:
        producer.close()
    return sent
