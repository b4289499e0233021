"""Which bundle a topic falls into (pure functions)."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulsar_broker import errors, resources
from pulsar_broker.namespace import bundles
from pulsar_common import naming

NS = naming.NamespaceName("public", "default")


def test_default_policies_make_four_bundles_covering_the_hash_space():
    found = bundles.bundles_of(NS, resources.default_policies())
    assert [b.range for b in found] == [
        "0x00000000_0x40000000", "0x40000000_0x80000000",
        "0x80000000_0xc0000000", "0xc0000000_0xffffffff"]
    assert [b.closed for b in found] == [False, False, False, True]
    assert str(found[0]) == "public/default/0x00000000_0x40000000"


@given(st.integers(min_value=0, max_value=0xFFFFFFFF), st.integers(min_value=1, max_value=64))
def test_every_hash_falls_into_exactly_one_bundle(hash_code, count):
    found = bundles.bundles_of(NS, resources.default_policies(count))
    assert sum(b.holds(hash_code) for b in found) == 1


def test_a_topic_hashes_by_the_crc32_of_its_full_name():
    topic = naming.TopicName.parse("persistent://public/default/orders-partition-3")
    assert bundles.topic_hash(topic) == zlib.crc32(b"persistent://public/default/orders-partition-3")
    bundle = bundles.bundle_of(topic, resources.default_policies())
    assert bundle.holds(bundles.topic_hash(topic))


def test_partitions_of_one_topic_spread_over_bundles():
    policies = resources.default_policies()
    parent = naming.TopicName.parse("persistent://public/default/orders")
    assert len({bundles.bundle_of(parent.partition(i), policies) for i in range(16)}) > 1


def test_a_bundle_is_found_by_its_range_text_only_when_the_namespace_has_it():
    policies = resources.default_policies()
    assert bundles.find_bundle(NS, policies, "0x40000000_0x80000000").lower == 0x40000000
    with pytest.raises(errors.NotFoundError):
        bundles.find_bundle(NS, policies, "0x00000000_0x80000000")
    with pytest.raises(errors.InvalidRequestError):
        bundles.find_bundle(NS, policies, "all")
