"""--log-level and --log-format as every service takes them, PULSAR_LOG_LEVEL included."""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys

import pytest

from pulsar_common import log_config


def parsed(argv: list[str], environ: dict[str, str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    log_config.add_arguments(parser, environ=environ or {})
    return parser.parse_args(argv)


@pytest.mark.parametrize(("given", "level"), [
    ("info", "info"), ("DEBUG", "debug"), ("Warn", "warn"), ("trace", "trace"), ("off", "off"),
])
def test_log4j_level_names_are_accepted_in_any_case(given, level):
    assert parsed(["--log-level", given]).log_level == level


def test_pulsar_log_level_sets_the_default_and_the_flag_wins():
    assert parsed([], {"PULSAR_LOG_LEVEL": "debug"}).log_level == "debug"
    assert parsed(["--log-level", "error"], {"PULSAR_LOG_LEVEL": "debug"}).log_level == "error"
    assert parsed([]).log_level == "info"


def test_an_unknown_level_is_an_argument_error_naming_the_choices(capsys):
    with pytest.raises(SystemExit) as exited:
        parsed(["--log-level", "bogus"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "unknown log level 'bogus'" in err and "warn" in err


def test_an_unknown_level_from_the_environment_is_the_same_error(capsys):
    with pytest.raises(SystemExit):
        parsed([], {"PULSAR_LOG_LEVEL": "loud"})
    assert "unknown log level 'loud'" in capsys.readouterr().err


def test_json_format_writes_one_object_per_line_with_the_exception():
    formatter = log_config.JsonFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("pulsar_broker.x", logging.ERROR, __file__, 1,
                                   "failed %s", ("ledger 7",), sys.exc_info())
    line = json.loads(formatter.format(record))
    assert line["level"] == "ERROR" and line["logger"] == "pulsar_broker.x"
    assert line["message"] == "failed ledger 7"
    assert "ValueError: boom" in line["exception"]
    assert line["ts"].endswith("+00:00")


@pytest.mark.parametrize("command", ["standalone", "broker", "bookie", "proxy", "functions-worker"])
def test_every_service_refuses_a_bogus_level_without_a_traceback(command):
    result = subprocess.run(
        [sys.executable, "-m", "pulsar_common.cli.main", command, "--log-level", "bogus"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unknown log level 'bogus'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("formatter", [log_config.TextFormatter(), log_config.JsonFormatter()])
def test_a_name_from_a_client_cannot_forge_a_log_line(formatter):
    hostile = "persistent://public/default/t\n2026-01-01 ERROR forged\x1b[2J\u202eevil\u2028x"
    record = logging.LogRecord("pulsar_broker", logging.WARNING, __file__, 1,
                               "loaded topic %s", (hostile,), None)
    line = formatter.format(record)
    assert "\n" not in line and "\x1b" not in line
    assert "\u202e" not in line and "\u2028" not in line
    assert "\\x0a2026-01-01 ERROR forged\\x1b[2J\\u202eevil\\u2028x" in (
        line if isinstance(formatter, log_config.TextFormatter) else json.loads(line)["message"])


def test_a_traceback_keeps_its_lines():
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (),
                                   sys.exc_info())
    text = log_config.TextFormatter().format(record)
    assert text.count("\n") >= 2 and "ValueError: boom" in text
