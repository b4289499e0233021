"""The three answers deduplication gives a SEND (pure: no ledger is touched)."""

from __future__ import annotations

from typing import Any, cast

from pulsar_broker.topics.deduplication import MessageDeduplication, Status


def fresh() -> MessageDeduplication:
    return MessageDeduplication(cast(Any, None))


def test_new_sequence_ids_are_pushed_and_stored():
    dedup = fresh()
    assert dedup.check("p", 0, -1) is Status.NOT_DUPLICATE
    assert dedup.check("p", 1, -1) is Status.NOT_DUPLICATE
    assert dedup.last_sequence_id("p") == 1
    assert dedup.check("other", 0, -1) is Status.NOT_DUPLICATE


def test_a_resend_of_an_add_in_flight_is_unknown_until_it_is_persisted():
    dedup = fresh()
    assert dedup.check("p", 0, -1) is Status.NOT_DUPLICATE
    assert dedup.check("p", 0, -1) is Status.UNKNOWN
    dedup.highest_persisted["p"] = 0  # what persisted() records, without a snapshot
    assert dedup.check("p", 0, -1) is Status.DUPLICATE


def test_a_failed_publish_lets_the_resend_be_stored():
    dedup = fresh()
    dedup.check("p", 0, -1)
    dedup.highest_persisted["p"] = 0
    dedup.check("p", 1, -1)
    dedup.publish_failed()
    assert dedup.check("p", 1, -1) is Status.NOT_DUPLICATE
    assert dedup.check("p", 0, -1) is Status.DUPLICATE


def test_a_batch_pushes_up_to_its_highest_sequence_id():
    dedup = fresh()
    assert dedup.check("p", 10, 19) is Status.NOT_DUPLICATE
    assert dedup.check("p", 15, -1) is Status.UNKNOWN
    assert dedup.check("p", 20, -1) is Status.NOT_DUPLICATE
