"""The access-mode decisions of producer_access, case by case (Apache's AbstractTopic rules)."""

from __future__ import annotations

import pytest
from pulsar_broker.topics import producer_access as pa

M = pa.AccessMode


@pytest.mark.parametrize(("mode", "exclusive", "waiting", "producers", "outcome"), [
    # Shared: welcome unless the topic is (or will be) exclusive.
    (M.SHARED, False, 0, False, pa.Grant(None)),
    (M.SHARED, False, 0, True, pa.Grant(None)),
    (M.SHARED, True, 0, True, pa.ProducerBusyError),
    (M.SHARED, False, 1, True, pa.ProducerBusyError),
    # Exclusive: only on an empty topic, else fenced at once.
    (M.EXCLUSIVE, False, 0, False, pa.Grant(5)),
    (M.EXCLUSIVE, False, 0, True, pa.ProducerFencedError),
    (M.EXCLUSIVE, True, 0, True, pa.ProducerFencedError),
    (M.EXCLUSIVE, False, 1, True, pa.ProducerFencedError),
    # WaitForExclusive: waits behind any producer.
    (M.WAIT_FOR_EXCLUSIVE, False, 0, False, pa.Grant(5)),
    (M.WAIT_FOR_EXCLUSIVE, False, 0, True, pa.Queue()),
    (M.WAIT_FOR_EXCLUSIVE, True, 0, True, pa.Queue()),
    # ExclusiveWithFencing: always wins, fencing whoever is there.
    (M.EXCLUSIVE_WITH_FENCING, False, 0, False, pa.Grant(5)),
    (M.EXCLUSIVE_WITH_FENCING, False, 0, True, pa.FenceThenGrant(5)),
    (M.EXCLUSIVE_WITH_FENCING, True, 0, True, pa.FenceThenGrant(5)),
    (M.EXCLUSIVE_WITH_FENCING, False, 2, True, pa.FenceThenGrant(5)),
])
def test_admission_by_access_mode(mode, exclusive, waiting, producers, outcome):
    access = pa.ProducerAccess(epoch=4)
    access.exclusive_producer = "holder" if exclusive else None
    access.waiting = waiting
    if isinstance(outcome, type):
        with pytest.raises(outcome):
            access.admit(mode, "new", None, producers)
    else:
        assert access.admit(mode, "new", None, producers) == outcome


@pytest.mark.parametrize("mode", [M.EXCLUSIVE, M.WAIT_FOR_EXCLUSIVE, M.EXCLUSIVE_WITH_FENCING])
def test_a_producer_announcing_an_older_epoch_is_fenced_and_the_current_one_kept(mode):
    access = pa.ProducerAccess(epoch=3)
    with pytest.raises(pa.ProducerFencedError):
        access.admit(mode, "stale", 2, False)
    assert not access.has_exclusive
    assert access.admit(mode, "current", 3, False) == pa.Grant(3)


def test_the_first_exclusive_producer_of_a_topic_gets_epoch_zero():
    assert pa.ProducerAccess().admit(M.EXCLUSIVE, "p", None, False) == pa.Grant(0)


def test_an_exclusive_grant_reserves_the_topic_before_its_epoch_is_stored():
    access = pa.ProducerAccess()
    access.admit(M.EXCLUSIVE, "first", None, False)
    with pytest.raises(pa.ProducerFencedError):
        access.admit(M.EXCLUSIVE, "second", None, False)
    access.release()
    assert access.admit(M.EXCLUSIVE, "second", None, False) == pa.Grant(0)


def test_a_waiting_producer_takes_the_next_epoch_when_promoted():
    access = pa.ProducerAccess(epoch=7)
    assert access.admit(M.WAIT_FOR_EXCLUSIVE, "w", None, True) == pa.Queue()
    assert access.promote("w", None) == 8
    assert access.waiting == 0 and access.exclusive_producer == "w"
