"""Topic names in every form the clients send."""

from __future__ import annotations

import pytest

from pulsar_common import naming


@pytest.mark.parametrize(
    ("text", "full"),
    [
        ("my-topic", "persistent://public/default/my-topic"),
        ("t1/ns1/a", "persistent://t1/ns1/a"),
        ("persistent://t/n/x", "persistent://t/n/x"),
        ("non-persistent://t/n/x", "non-persistent://t/n/x"),
    ],
)
def test_short_and_full_forms_normalise(text, full):
    assert str(naming.TopicName.parse(text)) == full


@pytest.mark.parametrize("bad", ["", "a/b", "foo://t/n/x", "t/n/", "t/n/x/y", "persistent://t//x"])
def test_invalid_names_are_rejected(bad):
    with pytest.raises(naming.InvalidTopicNameError):
        naming.TopicName.parse(bad)


def test_partition_names_round_trip():
    topic = naming.TopicName.parse("persistent://t/n/orders")
    p3 = topic.partition(3)
    assert str(p3) == "persistent://t/n/orders-partition-3"
    assert p3.partition_index == 3
    assert p3.partitioned_topic_name == topic
    assert topic.partition_index == -1


def test_persistence_name_matches_pulsar_layout():
    assert naming.TopicName.parse("a").persistence_name == "public/default/persistent/a"


def test_persistence_name_is_built_once_and_leaves_equality_and_hash_alone():
    topic = naming.TopicName.parse("persistent://t/n/x")
    assert topic.persistence_name is topic.persistence_name
    fresh = naming.TopicName.parse("t/n/x")
    # Shared by every parse of the name, so the maps keyed by it hold one string.
    assert fresh.persistence_name is topic.persistence_name
    assert topic == fresh and hash(topic) == hash(fresh) and {topic: 1}[fresh] == 1
    assert repr(topic) == repr(fresh)


def test_the_full_name_is_shared_by_every_parse_of_a_topic():
    first = naming.TopicName.parse("persistent://t/n/shared")
    again = naming.TopicName.parse("t/n/shared")
    assert str(first) == "persistent://t/n/shared"
    assert str(first) is str(again)
    assert str(naming.TopicName.parse("non-persistent://t/n/shared")) == (
        "non-persistent://t/n/shared")
