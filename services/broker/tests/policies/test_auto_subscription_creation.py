"""autoSubscriptionCreation of a namespace (over the broker's allowAutoSubscriptionCreation):
when off, a consumer may attach only to a durable subscription that already exists, as in
Apache. The broker answers SubscriptionNotFound for any other; the C++ client (under the
Python wheel) takes that error as retriable and tries again until its operation timeout,
then raises Timeout, as it does against Apache's broker."""

from __future__ import annotations

import pulsar
import pytest
from pulsar_broker import config as broker_config
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import policies

LEDGER = ml_config.ManagedLedgerConfig()

#: What the official client raises for a refused subscription (see the module docstring).
REFUSED = (pulsar.SubscriptionNotFound, pulsar.Timeout)



@pytest.mark.parametrize(("broker_allows", "stored", "expected"), [
    (True, None, True),
    (False, None, False),
    (True, {"allowAutoSubscriptionCreation": False}, False),
    (False, {"allowAutoSubscriptionCreation": True}, True),
])
def test_the_namespace_override_wins_over_the_broker_setting(broker_allows, stored, expected):
    conf = broker_config.BrokerConfig(allow_auto_subscription_creation=broker_allows)
    record = None if stored is None else {"autoSubscriptionCreationOverride": stored}
    assert policies.resolve(record, conf, LEDGER).auto_subscription_creation is expected


def test_a_topic_override_wins_over_the_namespace():
    merged = policies.with_topic_overrides(
        {"autoSubscriptionCreationOverride": {"allowAutoSubscriptionCreation": True}},
        {"autoSubscriptionCreationOverride": {"allowAutoSubscriptionCreation": False}})
    resolved = policies.resolve(merged, broker_config.BrokerConfig(), LEDGER)
    assert resolved.auto_subscription_creation is False


def test_a_new_subscription_is_refused_when_auto_creation_is_off(quick_client, admin,
                                                                 namespace):
    admin.set_policy(namespace, "autoSubscriptionCreation",
                     {"allowAutoSubscriptionCreation": False})
    topic = f"persistent://{namespace}/no-auto-subscription"
    with pytest.raises(REFUSED):
        quick_client.subscribe(topic, "new-one")
    assert "new-one" not in admin.stats(topic)["subscriptions"]


def test_existing_and_admin_created_subscriptions_and_readers_still_work(client, admin,
                                                                         namespace):
    topic = f"persistent://{namespace}/existing-subscription"
    client.subscribe(topic, "before").close()
    admin.set_policy(namespace, "autoSubscriptionCreation",
                     {"allowAutoSubscriptionCreation": False})
    admin.create_subscription(topic, "by-admin")
    producer = client.create_producer(topic)
    producer.send(b"hello")
    for name in ("before", "by-admin"):
        consumer = client.subscribe(topic, name)
        assert consumer.receive(timeout_millis=10_000).data() == b"hello"
        consumer.close()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=10_000).data() == b"hello"
    reader.close()
    producer.close()


def test_subscribing_works_again_once_auto_creation_is_back_on(quick_client, admin,
                                                                namespace):
    admin.set_policy(namespace, "autoSubscriptionCreation",
                     {"allowAutoSubscriptionCreation": False})
    topic = f"persistent://{namespace}/back-on"
    with pytest.raises(REFUSED):
        quick_client.subscribe(topic, "later")
    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/autoSubscriptionCreation")
    # The loaded topic gets the removed policy through the policies watch; the client's
    # own retries (within its operation timeout) wait for it.
    quick_client.subscribe(topic, "later").close()
