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


@dataclasses.dataclass(frozen=True)
class Addressed:
    advertised: str = config.setting("advertisedAddress", "localhost")
    cache_mb: int = config.setting("dbStorage_writeCacheMaxSizeMb", 64)
    url: str = config.setting("metadataStoreUrl", "")


def test_empty_values_in_a_file_mean_the_default(tmp_path):
    path = tmp_path / "broker.conf"
    path.write_text("advertisedAddress=\ndbStorage_writeCacheMaxSizeMb=\nmetadataStoreUrl =  \n")
    assert config.load(Addressed, path, environ={}) == Addressed()


def test_java_properties_separators_continuations_and_comments(tmp_path):
    path = tmp_path / "x.conf"
    path.write_text("! old-style comment\n  brokerServicePort : 7001\n"
                    "ledgerDirectories = a,\\\n    b\njournalSyncData false\n")
    assert config.load(Example, path, environ={}) == Example(port=7001, sync=False,
                                                             dirs=("a", "b"))


def test_a_value_keeps_its_own_colons_and_equals(tmp_path):
    path = tmp_path / "x.conf"
    path.write_text("metadataStoreUrl=etcd:http://h:2379/a=b\n")
    assert config.load(Addressed, path, environ={}).url == "etcd:http://h:2379/a=b"


def test_environment_overrides_the_file_and_overrides_win(tmp_path):
    path = tmp_path / "x.conf"
    path.write_text("brokerServicePort=7000\njournalSyncData=true\n")
    environ = {"PULSAR_PREFIX_brokerServicePort": "7100", "journalSyncData": "false",
               "someRatio": "0.25", "PATH": "/bin"}
    settings = config.load(Example, path, {"someRatio": "0.75"}, environ=environ)
    assert settings == Example(port=7100, sync=False, ratio=0.75)


def test_unknown_keys_are_warned_about_once_by_name(tmp_path, caplog):
    path = tmp_path / "x.conf"
    path.write_text("brokerServicePort=7000\nzookeeperServers=zk:2181\nloadBalancerEnabled=true\n")
    with caplog.at_level("WARNING"):
        config.load_many([Example, Addressed], path, environ={"PULSAR_PREFIX_fancyKey": "1"})
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "fancyKey, loadBalancerEnabled, zookeeperServers" in warnings[0]


def test_strict_loading_refuses_unknown_keys(tmp_path):
    path = tmp_path / "x.conf"
    path.write_text("zookeeperServers=zk:2181\n")
    with pytest.raises(errors.ConfigError, match="zookeeperServers"):
        config.load(Example, path, strict=True, environ={})
