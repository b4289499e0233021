"""`pulsar autorecovery`'s command line: registered in `pulsar`, refuses bad settings."""

from __future__ import annotations

import pytest
from pulsar_bookie.autorecovery import cli
from pulsar_common.cli import main as pulsar_main


def test_pulsar_lists_the_autorecovery_command() -> None:
    parser = pulsar_main.build_parser({"autorecovery": pulsar_main.COMMANDS["autorecovery"]})
    args = parser.parse_args(["autorecovery", "--conf", "lostBookieRecoveryDelay=5"])
    assert args.conf == ["lostBookieRecoveryDelay=5"]


def test_print_config_shows_the_autorecovery_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--print-config", "--conf", "auditorPeriodicCheckInterval=60"]) == 0
    printed = capsys.readouterr().out
    assert "auditorPeriodicCheckInterval=60" in printed
    assert "lostBookieRecoveryDelay=0" in printed


@pytest.mark.parametrize("overrides", [
    [],  # no metadataServiceUri
    ["--conf", "metadataServiceUri=etcd:http://127.0.0.1:1", "--conf",
     "lostBookieRecoveryDelay=-1"],
    ["--conf", "noSuchSetting=1"],
])
def test_bad_settings_exit_2(overrides: list[str]) -> None:
    assert cli.main(overrides) == 2
