"""The read-only decision table, service settings validation, and `pulsar bookie` options."""

from __future__ import annotations

import pathlib

import pytest
from pulsar_bookie import cli
from pulsar_bookie import config as bookie_config
from pulsar_bookie.service import bookie, disk_monitor
from pulsar_common import errors as common_errors
from pulsar_common.cli import main as cli_main

T = disk_monitor.DiskThresholds(full=0.95, writable_below=0.90)


@pytest.mark.parametrize(
    ("read_only", "usage", "expected"),
    [
        (False, 0.50, False),
        (False, 0.92, False),  # between the marks: a writable bookie stays writable
        (False, 0.95, True),
        (False, 0.99, True),
        (True, 0.99, True),
        (True, 0.92, True),  # between the marks: a read-only bookie stays read-only
        (True, 0.90, True),
        (True, 0.89, False),
    ],
)
def test_read_only_decision_has_hysteresis(read_only: bool, usage: float, expected: bool) -> None:
    assert disk_monitor.decide_read_only(read_only, usage, T) is expected


@pytest.mark.parametrize(
    "overrides",
    [
        {"diskUsageThreshold": 0.8, "diskUsageLwmThreshold": 0.9},
        {"diskUsageThreshold": 1.5},
        {"maxPendingAddRequestsPerThread": 0},
        {"diskCheckInterval": 0},
        {"metadataServiceUri": "etcd://127.0.0.1:1", "bookiePort": 0},
    ],
)
def test_service_refuses_settings_that_cannot_work(
    tmp_path: pathlib.Path, overrides: dict[str, object]
) -> None:
    conf = bookie_config.BookieConfig(
        journalDirectory=str(tmp_path / "j"), ledgerDirectories=(str(tmp_path / "l"),),
        **overrides,  # type: ignore[arg-type]
    )
    with pytest.raises(common_errors.ConfigError):
        bookie.validate(conf)


def test_bookie_id_is_the_advertised_address_and_port() -> None:
    conf = bookie_config.BookieConfig(advertisedAddress="bk-0.bk.ns.svc", bookiePort=3181)
    assert bookie.bookie_id_of(conf) == "bk-0.bk.ns.svc:3181"
    assert bookie.bookie_id_of(bookie_config.BookieConfig(bookieId="bookie-7")) == "bookie-7"


def test_print_config_shows_overrides_with_apache_keys(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf_file = tmp_path / "bookkeeper.conf"
    conf_file.write_text("bookiePort=3999\nsomeUnknownApacheKey=1\n")
    assert cli.main(["--config", str(conf_file), "--conf", "httpServerPort=8123",
                     "--print-config"]) == 0
    out = capsys.readouterr().out
    assert "bookiePort=3999\n" in out
    assert "httpServerPort=8123\n" in out


def test_unknown_override_is_a_configuration_error(caplog: pytest.LogCaptureFixture) -> None:
    assert cli.main(["--conf", "noSuchSetting=1"]) == 2
    assert "noSuchSetting" in caplog.text


def test_the_pulsar_command_can_mount_bookie(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli_main.build_parser(
        {"bookie": ("run a bookie", "pulsar_bookie.cli:add_arguments")}
    )
    args = parser.parse_args(["bookie", "--conf", "bookiePort=4181", "--print-config"])
    assert args.run(args) == 0
    assert "bookiePort=4181\n" in capsys.readouterr().out
