"""Table tests for the pure helpers of the admin REST API: header times, message id JSON."""

from __future__ import annotations

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.web import peek, subscriptions


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
