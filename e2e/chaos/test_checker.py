"""The chaos checker's rules, each on a small hand-made history."""

from __future__ import annotations

from tools.chaos import checker


def test_an_acknowledged_value_missing_from_the_topic_is_lost() -> None:
    found = checker.check_topic("t", True, {("a", 0): "1:0", ("a", 1): "1:1"}, [("a", 0)])
    assert found.lost == 1
    assert found.lost_examples == ("a:1 (acked as 1:1)",)


def test_values_stored_but_never_acknowledged_are_not_lost_and_not_duplicates() -> None:
    found = checker.check_topic("t", True, {("a", 0): "1:0"}, [("a", 0), ("a", 1)])
    assert (found.lost, found.duplicates, found.order_violations) == (0, 0, 0)


def test_a_value_stored_twice_is_one_duplicate() -> None:
    found = checker.check_topic("t", False, {("a", 0): "1:0"}, [("a", 0), ("a", 0), ("b", 0)])
    assert found.duplicates == 1
    assert found.order_violations == 0


def test_a_smaller_value_after_a_larger_one_of_the_same_key_is_an_order_violation() -> None:
    stored = [("a", 0), ("b", 5), ("a", 2), ("a", 1), ("b", 6), ("a", 3)]
    assert checker.order_violations(stored) == 1


def test_a_retry_stored_again_right_after_itself_keeps_the_order() -> None:
    assert checker.order_violations([("a", 0), ("a", 1), ("a", 1), ("a", 2)]) == 0


def test_a_mark_delete_going_back_is_excused_only_by_a_broker_fault_in_between() -> None:
    samples = [
        (10.0, {("t", "s"): "3:10", ("t", "u"): "3:5"}),
        (20.0, {("t", "s"): "3:8", ("t", "u"): "3:6"}),
        (30.0, {("t", "s"): "3:9", ("t", "u"): "3:4"}),
    ]
    found = checker.regressions(samples, [(12.0, 15.0, "cycle 1 kill-broker broker-0")])
    assert [(r.subscription, r.before, r.after, r.excused_by) for r in found] == [
        ("s", "3:10", "3:8", "cycle 1 kill-broker broker-0"),
        ("u", "3:6", "3:4", ""),
    ]


def test_positions_compare_by_ledger_then_entry() -> None:
    assert checker.parse_position("10:0") > checker.parse_position("9:999")


def test_unavailability_adds_up_gaps_longer_than_a_second() -> None:
    total, longest = checker.unavailability([1.0, 1.5, 4.5, 5.0], start_s=0.0, end_s=5.2)
    assert (round(total, 2), round(longest, 2)) == (3.0, 3.0)


def test_no_acknowledged_send_at_all_is_unavailable_the_whole_run() -> None:
    assert checker.unavailability([], start_s=0.0, end_s=30.0) == (30.0, 30.0)


def test_gaps_count_for_the_fault_whose_window_they_fall_in() -> None:
    windows = [(0.0, 10.0, "kill-broker"), (10.0, 20.0, "relay-cut"),
               (20.0, 30.0, "kill-broker")]
    successes = [0.5, 1.0, 4.0, 10.5, 11.0, 20.5, 29.5]
    found = checker.unavailability_by_kind(successes, windows)
    # kill-broker: 1-4 and 4-10 in its first window, 20.5-29.5 in its second; relay-cut:
    # 11-20 (the 4-10.5 gap is cut at 10, leaving 0.5 s, under a second, in relay-cut's).
    assert {k: round(v, 2) for k, v in found.items()} == {"kill-broker": 18.0,
                                                         "relay-cut": 9.0}
