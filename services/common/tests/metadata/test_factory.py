"""Metadata store URLs in Apache Pulsar's style, and clear errors for anything else."""

from __future__ import annotations

import pytest
from pulsar_common import errors
from pulsar_common.metadata import factory


@pytest.mark.parametrize(("url", "endpoints", "chroot"), [
    ("etcd:http://127.0.0.1:2379", (("127.0.0.1", 2379),), ""),
    ("etcd:http://a:1,http://b:2", (("a", 1), ("b", 2)), ""),
    ("etcd:http://a:1,http://b:2/pulsar/c1", (("a", 1), ("b", 2)), "/pulsar/c1"),
    ("etcd://a:1,b:2", (("a", 1), ("b", 2)), ""),
    ("etcd://a:1/root", (("a", 1),), "/root"),
    ("etcd://localhost", (("localhost", 2379),), ""),
])
def test_etcd_urls_name_endpoints_and_an_optional_chroot(url, endpoints, chroot):
    assert factory.parse_etcd_url(url) == factory.EtcdTarget(endpoints, chroot)


@pytest.mark.parametrize(("url", "directory"), [
    ("rocksdb:/var/lib/pulsar/metadata", "/var/lib/pulsar/metadata"),
    ("rocksdb:///var/lib/pulsar/metadata", "/var/lib/pulsar/metadata"),
    ("rocksdb:data/metadata", "data/metadata"),
])
def test_rocksdb_urls_name_a_directory(url, directory):
    assert factory.parse_rocksdb_url(url) == directory


@pytest.mark.parametrize("url", [
    "zk:localhost:2181",
    "memory:local",
    "http://127.0.0.1:2379",
    "etcd:https://a:1,http://b:2",
    "etcd:http://:2379",
    "etcd:http://h:notaport",
    "etcd:http://a:1/x,http://b:2/y",
    "rocksdb:",
    "rocksdb://otherhost/data",
])
async def test_other_urls_are_configuration_errors(url):
    with pytest.raises(errors.ConfigError):
        await factory.create_store(url)


async def test_a_bad_chroot_or_session_timeout_is_a_configuration_error(tmp_path):
    with pytest.raises(errors.ConfigError):
        await factory.create_store(f"rocksdb:{tmp_path}", chroot="no-slash")
    with pytest.raises(errors.ConfigError):
        await factory.create_store(f"rocksdb:{tmp_path}", session_timeout_s=0)


def test_https_endpoints_mean_etcd_over_tls() -> None:
    target = factory.parse_etcd_url("etcd:https://a:2379,https://b:2379/chroot")
    assert target.secure and target.endpoints == (("a", 2379), ("b", 2379))
    assert not factory.parse_etcd_url("etcd:http://a:2379").secure

