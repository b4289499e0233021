"""`pulsar-admin topics truncate` and `topics trim-topic`: dropping a topic's stored data.

truncate moves every subscription of the topic to its end and deletes every
ledger but the current one, whatever the retention; trim-topic deletes now
the ledgers retention would let go at its next periodic check. Both apply to
each partition of a partitioned topic and print nothing, as Apache's do.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pulsar_client_tools.admin import client
from pulsar_client_tools.admin.common import Group, topic_path


def _truncate(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(topic_path(args.topic) + "/truncate")


def _trim(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(topic_path(args.topic) + "/trim")


def register(group: Group, topic_command: Callable[..., Any]) -> None:
    topic_command(group, "truncate",
                  "Truncate a topic: move every cursor to the end of the topic and delete "
                  "every ledger but the current one, whatever the retention", _truncate)
    topic_command(group, "trim-topic",
                  "Trim a topic: delete now the ledgers that every subscription consumed "
                  "and retention lets go", _trim)
