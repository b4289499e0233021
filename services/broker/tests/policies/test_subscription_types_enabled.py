"""subscriptionTypesEnabled (namespace policy over broker.conf's subscriptionTypesEnabled): a
consumer subscribing with a type the topic's namespace does not enable is refused with
NotAllowed and Apache's message; the change reaches loaded topics at once."""

from __future__ import annotations

import pulsar
import pytest
from pulsar_broker import config as broker_config
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import policies
from pulsar_common import errors as common_errors
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def test_the_namespace_list_wins_and_an_empty_one_means_the_brokers():
    conf = broker_config.BrokerConfig(subscription_types_enabled=("Exclusive", "Failover"))
    ledger = ml_config.ManagedLedgerConfig()
    assert policies.resolve({}, conf, ledger).subscription_types_enabled == {
        "Exclusive", "Failover"}
    assert policies.resolve({"subscription_types_enabled": []}, conf,
                            ledger).subscription_types_enabled == {"Exclusive", "Failover"}
    assert policies.resolve({"subscription_types_enabled": ["Shared"]}, conf,
                            ledger).subscription_types_enabled == {"Shared"}


def test_an_unknown_type_in_broker_conf_is_refused():
    with pytest.raises(common_errors.ConfigError, match="Sharded"):
        broker_config.load(None, {"subscriptionTypesEnabled": "Exclusive,Sharded"})


def test_a_type_the_namespace_does_not_enable_is_refused(client, raw_connection, admin,
                                                         namespace):
    topic = f"persistent://{namespace}/typed"
    client.subscribe(topic, "shared-before", consumer_type=pulsar.ConsumerType.Shared).close()
    admin.set_policy(namespace, "subscriptionTypesEnabled", ["Exclusive", "Failover"])
    assert admin.ok("GET", f"/admin/v2/namespaces/{namespace}/subscriptionTypesEnabled") == [
        "Exclusive", "Failover"]

    command = pb.BaseCommand(type=T.SUBSCRIBE)
    command.subscribe.topic = topic
    command.subscribe.subscription = "shared-after"
    command.subscribe.subType = pb.CommandSubscribe.Shared
    command.subscribe.consumer_id = 1
    command.subscribe.request_id = 1
    reply = raw_connection().request(command).command
    assert reply.type == T.ERROR
    assert (reply.error.error, reply.error.message) == (
        pb.NotAllowedError, f"Topic[{{{topic}}}] doesn't support Shared sub type!")
    with pytest.raises(pulsar.NotAllowedError):
        client.subscribe(topic, "shared-before", consumer_type=pulsar.ConsumerType.Shared)
    client.subscribe(topic, "exclusive", consumer_type=pulsar.ConsumerType.Exclusive).close()

    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/subscriptionTypesEnabled")
    client.subscribe(topic, "shared-after", consumer_type=pulsar.ConsumerType.Shared).close()
