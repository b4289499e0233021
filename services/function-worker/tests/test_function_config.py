"""Function configs in both spellings, the guarantees' decisions and the state log's fold."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulsar_functions import config, errors, state_log
from pulsar_functions.instance import cli as instance_cli
from pulsar_functions.instance import guarantees


def test_operator_keys_and_apache_keys_parse_to_the_same_config() -> None:
    operator = config.parse({
        "name": "fn", "className": "m.F", "inputs": ["in"], "output": "out",
        "processingGuarantee": "EFFECTIVELY_ONCE", "subscriptionName": "s",
        "subscriptionPosition": "earliest", "secretsMap": {"pw": "PULSAR_SECRET_PW"}})
    apache = config.parse({
        "tenant": "public", "namespace": "default", "name": "fn", "className": "m.F",
        "inputs": ["persistent://public/default/in"], "output": "out",
        "processingGuarantees": "EFFECTIVELY_ONCE", "subName": "s",
        "subscriptionPosition": "Earliest", "secrets": {"pw": "PULSAR_SECRET_PW"}})
    assert operator == apache
    assert operator.inputs == (config.InputSpec("persistent://public/default/in"),)
    assert config.parse(operator.to_json()) == operator


def test_input_specs_carry_serdes_schemas_and_patterns() -> None:
    function = config.parse({
        "name": "fn", "className": "m.F", "customSerdeInputs": {"a": "serde.PickleSerDe"},
        "inputSpecs": {"b": {"schemaType": "JSON"}},
        "topicsPattern": "persistent://public/default/logs-.*"})
    assert function.inputs == (
        config.InputSpec("persistent://public/default/a", serde_class_name="serde.PickleSerDe"),
        config.InputSpec("persistent://public/default/b", schema_type="JSON"),
        config.InputSpec("persistent://public/default/logs-.*", is_pattern=True))


@pytest.mark.parametrize(("document", "message"), [
    ({"className": "m.F", "inputs": ["a"]}, "name is required"),
    ({"name": "f", "inputs": ["a"]}, "className is required"),
    ({"name": "f", "className": "m.F"}, "no input topics"),
    ({"name": "f", "className": "m.F", "inputs": ["a"], "runtime": "JAVA"}, "only PYTHON"),
    ({"name": "f", "className": "m.F", "inputs": ["a"], "processingGuarantee": "SOMETIMES"},
     "not one of"),
    ({"name": "f", "className": "m.F", "inputs": ["a"], "parallelism": -1}, "negative"),
])
def test_unusable_configs_are_refused_with_a_reason(document: dict[str, object],
                                                    message: str) -> None:
    with pytest.raises(errors.InvalidFunctionConfigError, match=message):
        config.parse(document)


@pytest.mark.parametrize(("guarantee", "auto_ack", "point", "kind"), [
    ("ATMOST_ONCE", True, guarantees.AckPoint.ON_RECEIPT, guarantees.SubscriptionKind.SHARED),
    ("ATLEAST_ONCE", True, guarantees.AckPoint.AFTER_OUTPUT, guarantees.SubscriptionKind.SHARED),
    ("EFFECTIVELY_ONCE", True, guarantees.AckPoint.AFTER_OUTPUT,
     guarantees.SubscriptionKind.FAILOVER),
    ("ATLEAST_ONCE", False, guarantees.AckPoint.BY_FUNCTION, guarantees.SubscriptionKind.SHARED),
    ("MANUAL", True, guarantees.AckPoint.BY_FUNCTION, guarantees.SubscriptionKind.SHARED),
])
def test_each_guarantee_acknowledges_at_its_point(
    guarantee: str, auto_ack: bool, point: guarantees.AckPoint,
    kind: guarantees.SubscriptionKind,
) -> None:
    function = config.parse({"name": "f", "className": "m.F", "inputs": ["a"],
                             "processingGuarantee": guarantee, "autoAck": auto_ack})
    assert guarantees.ack_point(function) is point
    assert guarantees.subscription_kind(function) is kind


message_ids = st.tuples(st.integers(0, 1 << 26), st.integers(0, (1 << 24) - 1),
                        st.integers(-1, (1 << 12) - 1))


@given(message_ids, message_ids)
def test_sequence_ids_follow_message_id_order_and_are_never_zero(
    a: tuple[int, int, int], b: tuple[int, int, int],
) -> None:
    normal = (lambda m: (m[0], m[1], max(m[2], 0)))
    sa, sb = guarantees.sequence_id(*a), guarantees.sequence_id(*b)
    assert sa > 0 and sb > 0
    assert (sa < sb) == (normal(a) < normal(b))


updates = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["incr", "put", "set", "del"]),
                             st.integers(-5, 5), st.sampled_from(["0", "1", "2"])), max_size=40)


def _update(key: str, op: str, amount: int) -> state_log.Update:
    if op == "put":
        return state_log.Update(key, state_log.PUT, value=str(amount).encode())
    return state_log.Update(key, op, amount=amount)


def _modelled(model: dict[str, int | bytes], key: str, op: str, amount: int) -> None:
    if op == "incr":
        current = model.get(key, 0)
        model[key] = (current if isinstance(current, int)
                      else int.from_bytes(current, "big", signed=True)
                      if len(current) == 8 else 0) + amount
    elif op == "put":
        model[key] = str(amount).encode()
    elif op == "set":
        model[key] = amount
    else:
        model.pop(key, None)


def _compacted(log: list[state_log.Record]) -> list[state_log.Record]:
    """What the broker's compaction keeps: the latest record of each compaction key, in order."""
    latest = {record.compaction_key: i for i, record in enumerate(log)}
    return [record for i, record in enumerate(log) if latest[record.compaction_key] == i]


def _check(table: state_log.StateTable, model: dict[str, int | bytes]) -> None:
    for key in "abc":
        expected = model.get(key)
        if isinstance(expected, int):
            assert table.counter(key) == expected
            assert table.value(key) == expected.to_bytes(8, "big", signed=True)
        else:
            assert table.value(key) == expected


@given(updates)
def test_the_state_table_matches_a_simple_model_before_and_after_compaction(
        ops: list[tuple[str, str, int, str]]) -> None:
    """Writers (instance ids) take turns; the log they write folds to the model's state, and
    so does what compaction leaves of it."""
    table = state_log.StateTable()
    model: dict[str, int | bytes] = {}
    log: list[state_log.Record] = []
    for n, (key, op, amount, writer) in enumerate(ops):
        record = table.record_for(_update(key, op, amount), writer, f"epoch-{n}")
        decoded = state_log.decode(record.encode())
        assert decoded == record
        table.apply(decoded)
        log.append(decoded)
        _modelled(model, key, op, amount)
        _check(table, model)
    replayed = state_log.StateTable()
    for record in _compacted(log):
        replayed.apply(record)
    _check(replayed, model)
    for key in "abc":
        assert replayed.get(key) == table.get(key)


def test_parallel_writers_increments_all_count_and_a_put_starts_over() -> None:
    table = state_log.StateTable()
    for writer in ("0", "1", "0"):
        table.apply(table.record_for(state_log.Update("n", state_log.INCR, amount=2), writer, "x"))
    assert table.counter("n") == 6
    table.apply(table.record_for(state_log.Update("n", state_log.PUT, value=b"v"), "1", "e1"))
    assert table.value("n") == b"v"
    total = table.record_for(state_log.Update("n", state_log.INCR, amount=1), "0", "unused")
    assert isinstance(total, state_log.Total) and (total.epoch, total.total) == ("e1", 1)
    assert total.compaction_key == "c:0:n"


def test_function_state_json_round_trips_through_putstate() -> None:
    table = state_log.StateTable()
    for n, update in enumerate([state_log.update_from_state_json("n", {"numberValue": 41}),
                                state_log.Update("n", state_log.INCR, amount=1),
                                state_log.update_from_state_json("s", {"stringValue": "hello"})]):
        table.apply(table.record_for(update, "0", f"e{n}"))
    n, s = table.get("n"), table.get("s")
    assert n is not None and s is not None
    assert state_log.function_state_json("n", n) == {"key": "n", "numberValue": 42, "version": 2}
    assert state_log.function_state_json("s", s) == {"key": "s", "stringValue": "hello",
                                                     "version": 1}


@pytest.mark.parametrize(("explicit", "environ", "expected"), [
    (5, {"POD_NAME": "fn-function-2"}, 5),
    (None, {"POD_NAME": "fn-function-2", "HOSTNAME": "x-7"}, 2),
    (None, {"HOSTNAME": "fn-function-7"}, 7),
    (None, {"HOSTNAME": "laptop"}, 0),
])
def test_instance_id_comes_from_the_flag_or_the_pod_ordinal(
    explicit: int | None, environ: dict[str, str], expected: int,
) -> None:
    assert instance_cli.instance_id_from(explicit, environ) == expected


def test_without_the_client_wheel_the_command_names_the_extra(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from pulsar_common.cli import main

    monkeypatch.setitem(sys.modules, "pulsar", None)
    assert main.main(["function-instance", "--config", "/nonexistent.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'functions' extra" in err[0] and "pulsar-py[functions]" in err[0]
