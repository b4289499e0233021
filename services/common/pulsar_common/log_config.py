"""`--log-level` and `--log-format` for every service, with Apache's environment conventions.

Apache's images set the level with `PULSAR_LOG_LEVEL` (log4j names: trace,
debug, info, warn, error, fatal, off); a pod configured that way runs ours
unchanged. The flag wins over the variable. An unknown level, from either,
is an argparse error naming the choices, never a traceback.

`--log-format json` (or `PULSAR_LOG_FORMAT=json`) writes one JSON object per
line (time, level, logger, message, and the exception when there is one),
for log pipelines that parse lines; the default is plain text.

Either way a message is one line: names that come from clients (topics,
subscriptions, producer names) may hold control characters, and a newline or
an escape sequence in them must not forge a log line or rewrite a terminal.
Both formats write such characters as `\\xNN`/`\\uNNNN` escapes (line
breaks, C0 and C1 controls, DEL, and the Unicode line separators and bidi
overrides). An exception's traceback, which the code writes, keeps its lines.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import os
from collections.abc import Mapping

from pulsar_common import log_limits

LEVEL_ENV = "PULSAR_LOG_LEVEL"
FORMAT_ENV = "PULSAR_LOG_FORMAT"

#: log4j's level names (what Apache's scripts and charts pass) and Python's own, to
#: logging levels. Python has no TRACE: it logs as DEBUG.
LEVELS: Mapping[str, int] = {
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
    "critical": logging.CRITICAL,
    "off": logging.CRITICAL + 10,
}
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def parse_level(text: str) -> str:
    """argparse `type=` for a level name, case-insensitive; also applied to the default."""
    name = text.strip().lower()
    if name not in LEVELS:
        raise argparse.ArgumentTypeError(
            f"unknown log level {text!r} (choose from {', '.join(LEVELS)})")
    return name


def parse_format(text: str) -> str:
    name = text.strip().lower()
    if name not in FORMATS:
        raise argparse.ArgumentTypeError(
            f"unknown log format {text!r} (choose from {', '.join(FORMATS)})")
    return name


def add_arguments(parser: argparse.ArgumentParser, *, default_level: str = "info",
                  environ: Mapping[str, str] | None = None) -> None:
    """Add --log-level and --log-format; their defaults come from the environment."""
    env = os.environ if environ is None else environ
    parser.add_argument(
        "--log-level", type=parse_level, default=env.get(LEVEL_ENV) or default_level,
        metavar="LEVEL",
        help=f"{', '.join(LEVELS)} (default: ${LEVEL_ENV}, else {default_level})")
    parser.add_argument(
        "--log-format", type=parse_format, default=env.get(FORMAT_ENV) or "text",
        metavar="FORMAT", help=f"text or json (default: ${FORMAT_ENV}, else text)")


def _escapes() -> dict[int, str]:
    codes = [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x2028, 0x2029,
             *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    return {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in codes}


#: Characters a log line must not carry as they are, to their escapes.
ESCAPES: Mapping[int, str] = _escapes()


def one_line(text: str) -> str:
    """text with control characters, line breaks and bidi overrides escaped."""
    return text.translate(ESCAPES)


class TextFormatter(logging.Formatter):
    """TEXT_FORMAT, with the message kept to one line (`one_line`)."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = one_line(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts (UTC, ISO 8601), level, logger, message[, exception]."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
            .isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": one_line(record.getMessage()),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(level: str, log_format: str = "text") -> None:
    """Set up the root logger once, with the repeated-line limits every service uses."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    # Without force: a process that configured logging already (a test runner) keeps its
    # handlers, as it did when each service called basicConfig itself.
    logging.basicConfig(level=LEVELS[level], handlers=[handler])
    log_limits.install()


def configure_from(args: argparse.Namespace) -> None:
    """configure() from what add_arguments() parsed."""
    configure(args.log_level, getattr(args, "log_format", "text"))
