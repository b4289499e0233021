"""Dynamic broker configuration over REST (`pulsar-admin brokers ...-dynamic-config`): Apache's
paths, bodies and 412s; the value is stored and applied (see tests/policies for its effect on
a two-broker cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Http

CONFIGURATION = "/admin/v2/brokers/configuration"


@pytest.fixture
def restored(http: Http) -> Iterator[Http]:
    """The session's standalone is shared: every stored value goes away after the test."""
    yield http
    for key in http.get(CONFIGURATION + "/values").json():
        http.delete(f"{CONFIGURATION}/{key}")


def test_dynamic_keys_are_listed(http: Http) -> None:
    names = http.get(CONFIGURATION).json()
    assert names == sorted(names)
    assert {"dispatchThrottlingRateInMsg", "dispatchThrottlingRateInByte",
            "dispatchThrottlingRatePerTopicInMsg", "maxPublishRatePerTopicInMessages",
            "subscribeThrottlingRatePerConsumer", "dispatcherMaxReadBatchSize"} <= set(names)
    assert "clusterName" not in names and "maxUnackedMessagesPerConsumer" not in names


def test_an_update_is_stored_and_applied_and_a_delete_restores_broker_conf(restored: Http) -> None:
    http = restored
    assert http.get(CONFIGURATION + "/runtime").json()["maxPublishRatePerTopicInMessages"] == "0"
    reply = http.post(f"{CONFIGURATION}/maxPublishRatePerTopicInMessages/500")
    assert reply.status == 204
    assert http.get(CONFIGURATION + "/values").json() == {
        "maxPublishRatePerTopicInMessages": "500"}
    assert http.get(CONFIGURATION + "/runtime").json()["maxPublishRatePerTopicInMessages"] == "500"
    assert http.delete(f"{CONFIGURATION}/maxPublishRatePerTopicInMessages").status == 204
    assert http.get(CONFIGURATION + "/values").json() == {}
    assert http.get(CONFIGURATION + "/runtime").json()["maxPublishRatePerTopicInMessages"] == "0"


@pytest.mark.parametrize("key", ["clusterName", "maxUnackedMessagesPerConsumer", "noSuchKey"])
def test_a_key_that_is_not_dynamic_is_refused_with_412(restored: Http, key: str) -> None:
    reply = restored.post(f"{CONFIGURATION}/{key}/1")
    assert (reply.status, reply.reason) == (412, "Can't update non-dynamic configuration")
    reply = restored.delete(f"{CONFIGURATION}/{key}")
    assert (reply.status, reply.reason) == (412, "Can't delete non-dynamic configuration")
    assert restored.get(CONFIGURATION + "/values").json() == {}


@pytest.mark.parametrize("value", ["fast", "-1"])
def test_a_value_the_setting_cannot_take_is_refused_with_412(restored: Http, value: str) -> None:
    key = "dispatcherMaxReadBatchSize" if value == "-1" else "dispatchThrottlingRatePerTopicInMsg"
    reply = restored.post(f"{CONFIGURATION}/{key}/{value}")
    assert (reply.status, reply.reason) == (412, "Invalid dynamic-config value")
    assert restored.get(CONFIGURATION + "/values").json() == {}


def test_runtime_configuration_lists_every_setting_but_credentials(http: Http) -> None:
    runtime = http.get(CONFIGURATION + "/runtime").json()
    assert runtime["clusterName"] == "standalone"
    assert all(isinstance(v, str) for v in runtime.values())
    assert "tokenSecretKey" not in runtime
    assert "brokerClientAuthenticationParameters" not in runtime
