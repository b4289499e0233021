"""Reading Apache-style properties into typed settings."""

from __future__ import annotations

import dataclasses

import pytest

from pulsar_common import config, errors


@dataclasses.dataclass(frozen=True)
class Example:
    port: int = config.setting("brokerServicePort", 6650)
    sync: bool = config.setting("journalSyncData", True)
    dirs: tuple[str, ...] = config.setting("ledgerDirectories", ("data",))
    ratio: float = config.setting("someRatio", 0.5)


def test_file_values_are_typed_and_overrides_win(tmp_path):
    path = tmp_path / "x.conf"
    path.write_text("# comment\nbrokerServicePort=7000\njournalSyncData=false\n"
                    "ledgerDirectories=a, b\nunknownKey=1\n")
    settings = config.load(Example, path, {"someRatio": "0.9"})
    assert settings == Example(port=7000, sync=False, dirs=("a", "b"), ratio=0.9)


def test_unknown_override_is_rejected():
    with pytest.raises(errors.ConfigError, match="unknown setting"):
        config.load(Example, None, {"nope": "1"})


def test_bad_boolean_names_the_key():
    with pytest.raises(errors.ConfigError, match="journalSyncData"):
        config.load(Example, None, {"journalSyncData": "maybe"})


def test_render_round_trips(tmp_path):
    original = Example(port=1, sync=False, dirs=("x", "y"), ratio=2.0)
    path = tmp_path / "r.conf"
    path.write_text(config.render(original))
    assert config.load(Example, path) == original
