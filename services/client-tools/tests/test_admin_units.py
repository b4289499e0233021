"""Table tests for pulsar-admin's argument parsing: relative times, sizes, message ids."""

from __future__ import annotations

import pytest
from pulsar_client_tools.admin import topics as cli_topics
from pulsar_client_tools.admin import units


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
