"""Table tests for the pure helpers: CLI units and ids, header times, message id JSON."""

from __future__ import annotations

import pytest
from pulsar_broker.admin_cli import topics as cli_topics
from pulsar_broker.admin_cli import units
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.web import peek, subscriptions


@pytest.mark.parametrize(("text", "expected"), [
    ("30", 30), ("30s", 30), ("10m", 600), ("3h", 10800), ("2d", 172800), ("1w", 604800),
    ("-1", -1),
])
def test_relative_times_in_seconds(text: str, expected: int) -> None:
    assert units.seconds(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("100", 100), ("10K", 10 * 1024), ("1M", 1024**2), ("2G", 2 * 1024**3), ("-1", -1),
])
def test_sizes_in_bytes(text: str, expected: int) -> None:
    assert units.size_bytes(text) == expected


@pytest.mark.parametrize("text", ["", "ten", "5x", "1.5h"])
def test_bad_units_are_refused(text: str) -> None:
    with pytest.raises(units.UnitError):
        units.seconds(text)


def test_cli_message_ids() -> None:
    assert cli_topics.message_id("earliest") == {"ledgerId": -1, "entryId": -1}
    assert cli_topics.message_id("latest") == {"ledgerId": 2**63 - 1, "entryId": 2**63 - 1}
    assert cli_topics.message_id("12:7") == {"ledgerId": 12, "entryId": 7}
    with pytest.raises(units.UnitError):
        cli_topics.message_id("12")


def test_message_id_json_maps_sentinels_to_positions() -> None:
    assert subscriptions.position_from_json(None, ml.LATEST) == ml.LATEST
    assert subscriptions.position_from_json({"ledgerId": -1, "entryId": -1}, ml.LATEST) == ml.EARLIEST
    latest = {"ledgerId": 2**63 - 1, "entryId": 2**63 - 1}
    assert subscriptions.position_from_json(latest, ml.EARLIEST) == ml.LATEST
    assert subscriptions.position_from_json({"ledgerId": 3, "entryId": 4,
                                             "partitionIndex": -1}, ml.LATEST) == ml.Position(3, 4)


def test_header_times_are_utc_iso_with_milliseconds() -> None:
    assert peek.format_time_ms(0) == "1970-01-01T00:00:00.000Z"
    assert peek.format_time_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123Z"
